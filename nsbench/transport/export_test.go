package transport

// SetKernelFeature replaces the kernel probe for a test and returns the
// function that restores it.
func SetKernelFeature(f func(name string) (bool, string)) (restore func()) {
	old := kernelFeature
	kernelFeature = f
	return func() { kernelFeature = old }
}
