// The project templates `hookhost new` writes: examples/plugin-template-cpp/ and
// examples/plugin-template-c/, compiled into the program (host/cmake/embed_templates.cmake).
#pragma once

#include <cstddef>

namespace hookhost::embedded {

struct TemplateFile {
  const char* path;  // relative to examples/, e.g. "plugin-template-c/Makefile"
  const unsigned char* bytes;
  std::size_t size;
};
extern const TemplateFile template_files[];
extern const std::size_t template_file_count;

}  // namespace hookhost::embedded
