// scout version string (from `git describe` at build time).
#pragma once
namespace scout {
extern const char kVersion[];
}  // namespace scout
