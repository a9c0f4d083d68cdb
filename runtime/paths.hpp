// paths: the user's cache and data folders (XDG base directories), with convgen's own overrides.
#pragma once

#include <filesystem>

namespace convgen {

// Returns the folder for caches (the JIT cache): $CONVGEN_CACHE_DIR, else $XDG_CACHE_HOME/convgen, else
// $HOME/.cache/convgen. Throws InputError when none of those variables is set. The folder is not created.
std::filesystem::path user_cache_dir();

// Returns the folder for data worth keeping (the tuning database): $CONVGEN_DATA_DIR, else
// $XDG_DATA_HOME/convgen, else $HOME/.local/share/convgen. Throws InputError when none is set.
std::filesystem::path user_data_dir();

}  // namespace convgen
