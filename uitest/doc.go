// Package uitest tests the admin API's dashboard (control/admin, /ui/)
// in a real headless Chromium driven by chromedp, against a real server
// under load. It is a module of its own so that the browser driver is
// not a dependency of control for the programs that use it.
//
// The test looks for chromium, chromium-browser or google-chrome on PATH
// (scripts/deps.sh installs Debian's chromium). Without one it skips,
// and fails under CI=true. It writes a screenshot of the dashboard to
// SLUICE_UI_SCREENSHOT_DIR when set (else to the test's artifact
// directory: go test -artifacts keeps it) and logs its path.
package uitest
