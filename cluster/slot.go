// Package cluster knows how Redis Cluster places keys: the CRC16 hash slot
// of a key or of its hash tag, whether keys used together share a slot, how
// a key scheme spreads over slots and primaries, and, on a slot map, which
// node serves each slot. It builds the keyslot document offline and imports
// no Redis client: package live reads the slot map and the server's own
// slots from a server. The document also carries the reports of the Lua
// key lint (package lualint), which the caller runs.
package cluster

import "strings"

// Slots is the number of hash slots in a Redis Cluster.
const Slots = 16384

// crcTable holds the CRC16-XMODEM (polynomial 0x1021, initial value 0, no
// reflection) remainder of every byte value shifted into the high byte.
var crcTable = func() (t [256]uint16) {
	for b := range t {
		r := uint16(b) << 8
		for range 8 {
			if r&0x8000 != 0 {
				r = r<<1 ^ 0x1021
			} else {
				r <<= 1
			}
		}
		t[b] = r
	}
	return t
}()

// CRC16 returns the CRC16-XMODEM checksum of s, the checksum Redis Cluster
// uses for key placement (CRC16("123456789") is 0x31C3).
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// Tag returns the hash tag of key and true when the key has one: the text
// between the first '{' and the first '}' after it, when that text is not
// empty. Otherwise it returns "" and false, and the whole key is hashed.
func Tag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 {
		return "", false
	}
	return key[open+1 : open+1+n], true
}

// Hashed returns the part of key that decides its slot: the hash tag when
// there is one, else the whole key.
func Hashed(key string) string {
	if tag, ok := Tag(key); ok {
		return tag
	}
	return key
}

// Slot returns the Redis Cluster hash slot of key (0..16383), as CLUSTER
// KEYSLOT does. The empty key is in slot 0.
func Slot(key string) int {
	return int(CRC16(Hashed(key)) & (Slots - 1))
}
