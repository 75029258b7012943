package filesource

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symlinks followed resolving a path, as the kernel
// does (past it, reading the file fails with its own error).
const maxLinks = 40

// resolve follows the absolute path as the kernel does and returns every
// path whose change can change what it names: each symlink met on the
// way (path itself when it is one), then the file it resolves to, or the
// first element that does not exist. The paths are absolute and clean,
// each in a physical directory (no symlink in its parent).
func resolve(path string) []string {
	vol := filepath.VolumeName(path)
	cur := vol + string(filepath.Separator)
	todo := split(path[len(vol):])
	var out []string
	for links := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // cur is physical: its parent is too
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return append(out, next)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		out = append(out, next)
		if links++; links > maxLinks {
			return out
		}
		target, err := os.Readlink(next)
		if err != nil {
			return out
		}
		if filepath.IsAbs(target) {
			vol = filepath.VolumeName(target)
			cur = vol + string(filepath.Separator)
			target = target[len(vol):]
		}
		todo = append(split(target), todo...)
	}
	return append(out, cur)
}

func split(p string) []string { return strings.Split(p, string(filepath.Separator)) }

// concerns reports whether an event on name can change what the chain
// resolves to: name is one of its paths or a directory holding one.
func concerns(chain []string, name string) bool {
	name = filepath.Clean(name)
	for _, p := range chain {
		if p == name || strings.HasPrefix(p, name+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// dirs returns the directories to watch for the chain: those holding its
// paths, each once.
func dirs(chain []string) map[string]bool {
	out := make(map[string]bool, len(chain))
	for _, p := range chain {
		out[filepath.Dir(p)] = true
	}
	return out
}
