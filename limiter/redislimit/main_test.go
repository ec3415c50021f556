package redislimit

import (
	"testing"

	"github.com/ratelimit-dev/ratelimit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
