package collective

import (
	"errors"
	"testing"
	"time"
)

func TestTimeoutEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want time.Duration
		bad  bool
	}{
		{"", DefaultTimeout, false},
		{"90s", 90 * time.Second, false},
		{"250ms", 250 * time.Millisecond, false},
		{"ten seconds", 0, true},
		{"-1s", 0, true},
		{"0s", 0, true},
	} {
		t.Setenv(TimeoutEnv, tc.env)
		got, err := Timeout()
		if tc.bad {
			if !errors.Is(err, ErrBadCall) {
				t.Errorf("%s=%q: err = %v, want ErrBadCall", TimeoutEnv, tc.env, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s=%q: Timeout() = %v, %v; want %v", TimeoutEnv, tc.env, got, err, tc.want)
		}
	}
}
