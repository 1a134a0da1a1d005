#pragma once
// One event of a Kineto (torch.profiler) trace as the importer reads it, and the one-pass reader
// of the common case: an event object read straight from the stream's buffer, its keys dispatched
// by length and first bytes, each number parsed once, no document built. Anything out of the
// common case (an escaped string, a number or a value of a form the importer would have to
// interpret, malformed JSON, invalid UTF-8) makes it decline, and the importer reads that event
// with simdjson instead: the declined cases keep their exact behaviour and messages.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace dpro::trace {

// Everything the importer keeps from one event's "args".
struct RawArgs {
  std::optional<std::int64_t> correlation, external_id, device, stream, bytes, cbid;
  std::optional<std::int64_t> sequence_number, fwd_thread_id, group_size, in_nelems, out_nelems;
  std::optional<std::int64_t> wait_on_stream, wait_on_event_record_corr, rank_start, rank_stride;
  std::optional<std::int64_t> total_allocated, total_reserved, device_type;  // "[memory]" instant events
  std::optional<double> occupancy_pct, blocks_per_sm, warps_per_sm;         // a kernel's launch efficiency
  std::optional<std::array<int, 3>> grid, block;
  std::optional<std::string> collective_name, dtype, pg_name, pg_desc, pg_ranks, sync_kind;
  std::string input_dims, input_types;
  std::vector<int> group_ranks;  // from pg_ranks, completed when truncated
};

// The members of an event object the importer reads.
enum class EventKey : std::uint8_t { kOther, kPh, kCat, kName, kTs, kDur, kId, kPid, kTid, kArgs };
EventKey event_key(std::string_view key);

// The members of "args" the importer reads; the groups say how each value is read.
enum class ArgKey : std::uint8_t {
  kOther,
  // whole numbers (a number, or a string holding one)
  kCorrelation, kExternalId, kDevice, kStream, kBytes, kCbid, kSequenceNumber, kFwdThreadId,
  kInNelems, kOutNelems, kGroupSize, kRankStart, kRankStride, kWaitOnStream, kWaitOnEventRecordCorr,
  kTotalAllocated, kTotalReserved, kDeviceType,
  // real numbers
  kOccupancy, kBlocksPerSm, kWarpsPerSm,
  // three-component sizes
  kGrid, kBlock,
  // text
  kCollectiveName, kDtype, kPgName, kPgDesc, kSyncKind,
  // a list (a string or a JSON array, kept as text)
  kPgRanks,
  // JSON arrays kept as their raw text
  kInputDims, kInputTypes,
};
ArgKey arg_key(std::string_view key);
// The field of `a` a whole-number key fills; null for other keys.
std::optional<std::int64_t>* int_arg(RawArgs& a, ArgKey key);
// The field of `a` a real-number key fills; null for other keys.
std::optional<double>* real_arg(RawArgs& a, ArgKey key);
// The field of `a` a text key fills; null for other keys.
std::optional<std::string>* text_arg(RawArgs& a, ArgKey key);

// One event as read, before the importer interprets it. Views point into the text the event was
// read from and live as long as it.
struct ParsedEvent {
  std::string_view ph, cat, name;
  std::optional<Nanos> ts, dur;
  std::optional<std::int64_t> pid, tid, flow_id;
  RawArgs args;
  // "thread_name" metadata (ph "M") met on the way: thread (pid, tid) is called `name`.
  struct ThreadName {
    std::int64_t pid, tid;
    std::string_view name;
  };
  std::vector<ThreadName> thread_names;
};

// Reads the event object that starts at text[0] ('{'). Returns the bytes it spans, or 0 when it
// declines (the event is not of the common case, or not complete within `text`); `out` is then
// unspecified. Times are read with parse_micros_as_nanos (kineto_importer.h).
std::size_t scan_event(std::string_view text, ParsedEvent& out);

}  // namespace dpro::trace
