package preflight

import (
	"slices"
	"strings"
)

// commandLine formats args for a shell, quoting what needs it, so a fix can
// repeat the invocation exactly.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// withFlag returns args with flag set to value: "--size 5" and "--size=5"
// (also with one dash) are replaced, otherwise "flag value" is added
// after the other flags.
func withFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	short := strings.TrimPrefix(flag, "-") // "-size" for "--size"
	for i := 1; i < len(out); i++ {
		a := out[i]
		if a == "--" { // what follows is not flags
			return slices.Insert(out, i, flag, value)
		}
		if (a == flag || a == short) && i+1 < len(out) {
			out[i+1] = value
			return out
		}
		if strings.HasPrefix(a, flag+"=") || strings.HasPrefix(a, short+"=") {
			out[i] = flag + "=" + value
			return out
		}
	}
	return append(out, flag, value)
}
