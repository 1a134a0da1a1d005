#include "core/gzip_inflater.h"

namespace dpro {

// Built when CMake found no ISA-L (or DPRO_WITH_ISAL=OFF): ByteSource falls back to zlib.
std::unique_ptr<GzipInflater> make_isal_inflater() { return nullptr; }

}  // namespace dpro
