package limiter

import (
	"strings"
	"testing"
)

// replyError is an error reply as go-redis returns it (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// FuzzForeignKey: any error text a server sends is read without panicking;
// only the FOREIGNKEY prefix makes a ForeignKeyError.
func FuzzForeignKey(f *testing.F) {
	for _, s := range []string{"FOREIGNKEY hash has no TTL; x", "FOREIGNKEY", "FOREIGNKEY ", "ERR x", "FOREIGNKEYS x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		err := ForeignKey("k", TokenBucket, replyError(msg))
		if err != nil && !strings.HasPrefix(msg, ForeignKeyPrefix) {
			t.Errorf("foreignKey(%q) = %v for an error without the prefix", msg, err)
		}
		if err != nil {
			_ = err.Error()
		}
	})
}
