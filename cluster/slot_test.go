package cluster

import (
	"strconv"
	"testing"
)

// slotVectors are the acceptance vectors of issue 5; the integration test
// confirms each against a real cluster's CLUSTER KEYSLOT.
var slotVectors = []struct {
	key    string
	tag    string
	tagged bool
	slot   int
}{
	{"123456789", "", false, 12739},
	{"somekey", "", false, 11058},
	{"foo{hash_tag}", "hash_tag", true, 2515},
	{"user:42", "", false, 15880},
	{"rl:{user:42}:tb", "user:42", true, 15880},
	{"rl:user:42:tb", "", false, 11836},
	{"{}foo", "", false, 9500},
	{"foo{}{bar}", "", false, 8363},
	{"foo{{bar}}zap", "{bar", true, 4015},
	{"{{}}", "{", true, 4092},
	{"{", "", false, 4092},
	{"", "", false, 0},
}

func TestSlotVectors(t *testing.T) {
	for _, v := range slotVectors {
		t.Run(v.key, func(t *testing.T) {
			if got := Slot(v.key); got != v.slot {
				t.Errorf("Slot(%q) = %d, want %d", v.key, got, v.slot)
			}
			tag, ok := Tag(v.key)
			if tag != v.tag || ok != v.tagged {
				t.Errorf("Tag(%q) = %q, %v, want %q, %v", v.key, tag, ok, v.tag, v.tagged)
			}
		})
	}
}

func TestCRC16(t *testing.T) {
	tests := []struct {
		in   string
		want uint16
	}{
		{"", 0},
		{"123456789", 0x31C3},
		{"A", 0x58E5},
		{"\x00", 0},
		{"\xff", 0x1EF0},
	}
	for _, tt := range tests {
		if got := CRC16(tt.in); got != tt.want {
			t.Errorf("CRC16(%q) = %#04x, want %#04x", tt.in, got, tt.want)
		}
		if got := refCRC16([]byte(tt.in)); got != tt.want {
			t.Errorf("refCRC16(%q) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestTagBinary(t *testing.T) {
	tests := []struct {
		key    string
		tag    string
		tagged bool
	}{
		{"a{\x00}b", "\x00", true},
		{"a b{c d}e", "c d", true},
		{"\xff{\xfe\xfd}", "\xfe\xfd", true},
		{"}{x}", "x", true},
		{"}x{", "", false},
		{"{x", "", false},
		{"a{b{c}d}", "b{c", true},
		{"{\n}", "\n", true},
	}
	for _, tt := range tests {
		tag, ok := Tag(tt.key)
		if tag != tt.tag || ok != tt.tagged {
			t.Errorf("Tag(%q) = %q, %v, want %q, %v", tt.key, tag, ok, tt.tag, tt.tagged)
		}
	}
}

// refTag is the rule written out the slow, obvious way: walk the bytes,
// remember where the first '{' is, take everything up to the next '}'.
func refTag(key []byte) (string, bool) {
	start := -1
	for i, c := range key {
		if start < 0 {
			if c == '{' {
				start = i + 1
			}
			continue
		}
		if c == '}' {
			if i == start {
				return "", false
			}
			return string(key[start:i]), true
		}
	}
	return "", false
}

// refCRC16 computes CRC16-XMODEM bit by bit, without a table.
func refCRC16(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		for bit := 7; bit >= 0; bit-- {
			in := (b >> uint(bit)) & 1
			top := byte(crc>>15) & 1
			crc <<= 1
			if in^top == 1 {
				crc ^= 0x1021
			}
		}
	}
	return crc
}

func FuzzTag(f *testing.F) {
	for _, v := range slotVectors {
		f.Add([]byte(v.key))
	}
	f.Add([]byte("a{b}c{d}"))
	f.Add([]byte("\x00{\xff}"))
	f.Fuzz(func(t *testing.T, key []byte) {
		s := string(key)
		tag, ok := Tag(s)
		wantTag, wantOK := refTag(key)
		if tag != wantTag || ok != wantOK {
			t.Fatalf("Tag(%q) = %q, %v, want %q, %v", s, tag, ok, wantTag, wantOK)
		}
		hashed := key
		if wantOK {
			hashed = []byte(wantTag)
		}
		want := int(refCRC16(hashed) % Slots)
		if got := Slot(s); got != want {
			t.Fatalf("Slot(%q) = %d, want %d", s, got, want)
		}
	})
}

func BenchmarkSlot(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		switch i % 3 {
		case 0:
			keys[i] = "rl:{tenant:" + strconv.Itoa(i) + "}:tb"
		case 1:
			keys[i] = "rl:user:" + strconv.Itoa(i) + ":sliding-window"
		default:
			keys[i] = "session:" + strconv.Itoa(i*7919)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	sum := 0
	for i := 0; b.Loop(); i++ {
		sum += Slot(keys[i&1023])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "slots/s")
	if sum < 0 {
		b.Fatal("negative slot")
	}
}
