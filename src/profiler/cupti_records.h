#pragma once
// Turning completed CUPTI activity buffers into native records. Walks the buffer with
// cuptiActivityGetNextRecord (the only supported way: record sizes differ by version) and
// reads only fields that keep their offsets across CUDA 13.x record revisions.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/record_cost.h"
#include "trace/format/native_writer.h"

namespace dpro::profiler {

// Caches cuptiGetCallbackName per (runtime|driver, cbid). Not thread-safe.
// CUPTI's name of a callback id (cuptiGetCallbackName; domain 1 driver, 2 runtime), e.g.
// "cudaLaunchKernel_v7000"; "" when CUPTI knows none.
std::string cupti_callback_name(int domain, std::uint32_t cbid);

class CallbackNames {
 public:
  std::string_view runtime(std::uint32_t cbid) { return lookup(runtime_, 2, cbid); }
  std::string_view driver(std::uint32_t cbid) { return lookup(driver_, 1, cbid); }

 private:
  // domain: CUpti_CallbackDomain (1 driver, 2 runtime).
  std::string_view lookup(std::vector<std::string>& table, int domain, std::uint32_t cbid);
  std::vector<std::string> runtime_, driver_;
};

struct BufferParseResult {
  std::uint64_t records = 0;  // records encoded
  std::uint64_t ignored = 0;  // kinds we do not keep (overhead, name, ...)
};

// Encodes every record of buffer[0, valid_size) but the API records `skip` drops (the
// calibration's own calls; counted as ignored). Strings are interned (copied) by the encoder, so
// the buffer may be reused as soon as this returns.
BufferParseResult encode_activity_buffer(const std::uint8_t* buffer, std::size_t valid_size,
                                         native::RecordEncoder& out, CallbackNames& names,
                                         const ProbeRecordFilter* skip = nullptr);

}  // namespace dpro::profiler
