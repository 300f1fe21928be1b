// Output file naming and creation: the force=n unique-name rule, owner-only files, and links.
//
// What happens to an existing entry at the output's name:
//   name given by file=, force=y   opened as named, links followed (file=/dev/stdout is one),
//                                  a regular file truncated: the user chose that file
//   default name, force=y          the entry itself (a file or a link, never a link's target) is
//                                  removed and a new file created, as the original's remove()
//   either name, force=n           nothing existing is opened: the next free unique name
//                                  (prefix.<pid>suffix, then prefix.<pid>.<n>suffix) is created
// Every file the agent creates is created with O_EXCL (and O_NOFOLLOW), so a link planted between
// the check and the open fails the open instead of redirecting it.
#pragma once

#include <string>

namespace fasthprof {

// force=n unique-name rule (docs/compatibility.md §1.5, without its bugs: no fixed-size suffix buffer,
// never deletes another file, and the extension is looked for in the last path component only).
// Returns `path` unchanged if nothing exists there, else prefix.<pid>suffix: for binary output the
// suffix is empty; for text output an extension starting with ".txt" (any case) moves after the pid,
// otherwise ".txt" is added. Allocates the result; only stats the file system. Any thread.
std::string unique_output_path(const std::string& path, bool binary_format, int pid);

// The attempt-th unique name for path (0: prefix.<pid>suffix, n > 0: prefix.<pid>.<n>suffix),
// whether or not anything exists there. Allocates; no system calls. Any thread.
std::string unique_output_candidate(const std::string& path, bool binary_format, int pid, int attempt);

struct OutputFileChoice {
  std::string path;         // file= as given, or the default name
  bool user_named = false;  // file= gave it
  bool force = true;        // force=y
  bool binary_format = false;
  int pid = 0;
};

// Opens the output file by the rules above, mode 0600, O_CLOEXEC. Returns fd >= 0 with
// *opened_path set to the name used, or -1 with *error = "can't create profile file: <path>:
// <strerror>". Any thread.
int open_output_file(const OutputFileChoice& choice, std::string* opened_path, std::string* error);

// Creates (truncating/replacing) the output file with mode 0600 (even if it existed with other
// modes), O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC. A device or FIFO (/dev/stdout, /dev/full) is opened
// as it is. Returns fd >= 0, or -1 with *error = "can't create profile file: <path>: <strerror>".
// Any thread.
int create_output_file(const std::string& path, std::string* error);

}  // namespace fasthprof
