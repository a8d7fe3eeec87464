#pragma once
// The console's files (server/console/), compiled into jobctl by
// cmake/embed_files.cmake: nothing is read from disk or fetched at run time.
#include <span>
#include <string_view>

namespace jobctl::server {

struct EmbeddedFile {
  std::string_view name;  // its file name: "app.js"
  std::string_view body;
};

std::span<const EmbeddedFile> console_files();

}  // namespace jobctl::server
