package filesource

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resolve lists every symlink met and the file reached; concerns picks
// the events on them and on the directories holding them, nothing else.
func TestResolveFollowsTheChain(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	j := func(p ...string) string { return filepath.Join(append([]string{dir}, p...)...) }
	require.NoError(t, os.Mkdir(j("..v1"), 0o755))
	require.NoError(t, os.WriteFile(j("..v1", "sluice.yaml"), nil, 0o644))
	require.NoError(t, os.Symlink("..v1", j("..data")))
	require.NoError(t, os.Symlink("..data/sluice.yaml", j("sluice.yaml")))
	require.NoError(t, os.Symlink(j("sluice.yaml"), j("abs.yaml")))
	require.NoError(t, os.Symlink("./.././sluice.yaml", j("..v1", "up.yaml")))

	chain := resolve(j("sluice.yaml"))
	assert.Equal(t, []string{j("sluice.yaml"), j("..data"), j("..v1", "sluice.yaml")}, chain)
	assert.Equal(t, map[string]bool{dir: true, j("..v1"): true}, dirs(chain))
	assert.Equal(t, []string{j("abs.yaml"), j("sluice.yaml"), j("..data"), j("..v1", "sluice.yaml")}, resolve(j("abs.yaml")))
	assert.Equal(t, []string{j("..data"), j("..v1", "up.yaml"), j("sluice.yaml"), j("..data"), j("..v1", "sluice.yaml")}, resolve(j("..data", "up.yaml")))

	for name, want := range map[string]bool{
		j("sluice.yaml"):         true,
		j("..data"):              true,
		j("..v1"):                true, // holds the file
		j("..v1", "sluice.yaml"): true,
		dir:                      true,
		j("..data_tmp"):          false,
		j("..v2"):                false,
		j("..v1", "other.yaml"):  false,
		j(".sluice.yaml.swp"):    false,
		j("sluice.yaml.bak"):     false,
	} {
		assert.Equal(t, want, concerns(chain, name), name)
	}

	// A missing element ends the chain: its creation concerns it.
	assert.Equal(t, []string{j("gone")}, resolve(j("gone", "sluice.yaml")))
	assert.Equal(t, []string{j("gone.yaml")}, resolve(j("gone.yaml")))
	// A loop ends after maxLinks links.
	require.NoError(t, os.Symlink("loop", j("loop")))
	assert.Len(t, resolve(j("loop")), maxLinks+1)
}
