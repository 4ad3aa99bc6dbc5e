// Writing an output file so a reader never sees half of it and nobody can redirect it: the text
// goes to a new temporary file beside the target (created O_EXCL|O_NOFOLLOW under a random name,
// so a file or symbolic link planted there is never followed or overwritten), then is renamed
// over the target.
#pragma once

#include <string>
#include <string_view>

namespace scout::exporter {

// Writes `text` to `path` atomically (see above), mode 0644 less the umask. False with a
// one-line *error naming the path and the system's reason; no temporary file is left behind.
bool write_file_atomic(const std::string& path, std::string_view text, std::string* error);

}  // namespace scout::exporter
