//go:build !linux

package race

func getNofile() (cur, hard uint64, err error) { return 0, 0, errNoRlimit }

func setNofile(uint64) error { return errNoRlimit }
