//go:build !linux

package datasets

// physicalMemory is unknown off Linux: CheckCount lets every count through.
func physicalMemory() uint64 { return 0 }
