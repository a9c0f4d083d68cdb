// version: the convgen version and the commit the binaries were built from (for provenance records).
#pragma once

namespace convgen {

// Returns the project version, e.g. "0.1.0".
const char* build_version();

// Returns the short hash of the commit built, with "-dirty" when the tree had uncommitted changes, or "unknown"
// outside a git checkout. Written at build time (cmake/VersionScript.cmake), not at configure time.
const char* build_commit();

}  // namespace convgen
