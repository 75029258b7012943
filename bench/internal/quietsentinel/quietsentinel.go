// Package quietsentinel configures sentinel-golang for benchmarks and
// experiments: it writes nowhere and starts no background goroutine.
package quietsentinel

import (
	"os"
	"path/filepath"

	sentinelconfig "github.com/alibaba/sentinel-golang/core/config"
)

// Config returns sentinel-golang's default configuration for app, with the
// record log sent to Logger (a configured Logger replaces the file logger,
// so the log directory is never created), and the metric log, the system
// load/CPU/memory collectors, the cached-time ticker (which would read the
// real clock) and the metric HTTP exporter off.
func Config(app string) *sentinelconfig.Entity {
	c := sentinelconfig.NewDefaultConfig()
	c.Sentinel.App.Name = app
	c.Sentinel.Log.Logger = Logger{}
	c.Sentinel.Log.Dir = filepath.Join(os.TempDir(), app+"-sentinel")
	c.Sentinel.Log.Metric.FlushIntervalSec = 0
	c.Sentinel.Stat.System = sentinelconfig.SystemStatConfig{}
	c.Sentinel.UseCacheTime = false
	c.Sentinel.Exporter.Metric.HttpAddr = ""
	return c
}

// Logger discards sentinel-golang's record log; every level reports itself
// disabled, so sentinel does not even format messages.
type Logger struct{}

func (Logger) Debug(string, ...interface{})        {}
func (Logger) DebugEnabled() bool                  { return false }
func (Logger) Info(string, ...interface{})         {}
func (Logger) InfoEnabled() bool                   { return false }
func (Logger) Warn(string, ...interface{})         {}
func (Logger) WarnEnabled() bool                   { return false }
func (Logger) Error(error, string, ...interface{}) {}
func (Logger) ErrorEnabled() bool                  { return false }
