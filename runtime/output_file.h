// Output file naming and creation: the force=n unique-name rule and owner-only files.
#pragma once

#include <string>

namespace fasthprof {

// force=n unique-name rule (original-hprof.md §1.5, without its bugs: no fixed-size suffix buffer,
// never deletes another file, and the extension is looked for in the last path component only).
// Returns `path` unchanged if nothing exists there, else prefix.<pid>suffix: for binary output the
// suffix is empty; for text output an extension starting with ".txt" (any case) moves after the pid,
// otherwise ".txt" is added. Allocates the result; only stats the file system. Any thread.
std::string unique_output_path(const std::string& path, bool binary_format, int pid);

// Creates (truncating/replacing) the output file with mode 0600 (even if it existed with other
// modes), O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC. A device or FIFO (/dev/stdout, /dev/full) is opened
// as it is. Returns fd >= 0, or -1 with *error = "can't create profile file: <path>: <strerror>".
// Any thread.
int create_output_file(const std::string& path, std::string* error);

}  // namespace fasthprof
