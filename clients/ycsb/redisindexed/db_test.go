package redisindexed

import "testing"

// What Java's String.hashCode() returns for these (printed by jshell, OpenJDK 17).
func TestJavaHashCode(t *testing.T) {
	for s, want := range map[string]int32{
		"":                        0,
		"user1":                   111578566,
		"user6284781860667377211": -594971599,
		"usertable":               358348515,
		"\u00e9t\U0001F600":       8825678,
	} {
		if got := JavaHashCode(s); got != want {
			t.Errorf("hashCode(%q) = %d, want %d", s, got, want)
		}
	}
}
