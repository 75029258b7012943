package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
)

func TestCatalogDenseIDs(t *testing.T) {
	var b kernel.CatalogBuilder
	say := b.MustAdd("echo", "Say")
	add := b.MustAdd("math", "Add")
	shout := b.MustAdd("echo", "Shout")
	c := b.Build()
	require.Equal(t, []kernel.MethodID{0, 1, 2}, []kernel.MethodID{say, add, shout})
	require.Equal(t, 3, c.Methods())
	require.Equal(t, 2, c.Services())
	require.Equal(t, c.ServiceOf(say), c.ServiceOf(shout))
	require.NotEqual(t, c.ServiceOf(say), c.ServiceOf(add))
	id, ok := c.Lookup("echo/Shout")
	require.True(t, ok)
	require.Equal(t, shout, id)
	require.Equal(t, "echo/Shout", c.FullName(shout))
	sid, ok := c.Service("math")
	require.True(t, ok)
	require.Equal(t, "math", c.ServiceName(sid))
	_, ok = c.Lookup("echo/Whisper")
	require.False(t, ok)

	// The catalog does not change when the builder goes on.
	b.MustAdd("echo", "Whisper")
	require.Equal(t, 3, c.Methods())
}

func TestCatalogRejectsBadNames(t *testing.T) {
	var b kernel.CatalogBuilder
	_, err := b.Add("", "Say")
	require.ErrorContains(t, err, "empty service name")
	_, err = b.Add("echo", "")
	require.ErrorContains(t, err, "empty method name")
	_, err = b.Add("a/b", "Say")
	require.ErrorContains(t, err, "contains '/'")
	b.MustAdd("echo", "Say")
	_, err = b.Add("echo", "Say")
	require.ErrorContains(t, err, `"echo/Say" registered twice`)
	require.Panics(t, func() { b.MustAdd("echo", "Say") })
}

func TestNewRequiresCatalog(t *testing.T) {
	_, err := kernel.New(kernel.Config{})
	require.ErrorContains(t, err, "Catalog is required")
}
