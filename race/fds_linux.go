//go:build linux

package race

import "syscall"

func getNofile() (cur, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	return r.Cur, r.Max, nil
}

func setNofile(cur uint64) error {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return err
	}
	r.Cur = cur
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}
