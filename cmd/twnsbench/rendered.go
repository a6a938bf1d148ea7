package main

import "fmt"

// refuseOnPanic, deferred by a command that reads documents from files
// and renders them, turns a panic into a refusal of those files (exit 2,
// one line) in *err: the fuzz targets find no document that panics the
// readers or the renderers, and a file still must not crash twnsbench
// with a stack trace.
func refuseOnPanic(err *error, command string) {
	if r := recover(); r != nil {
		*err = refuse(fmt.Errorf("%s: cannot read or render the file given: %v", command, r))
	}
}
