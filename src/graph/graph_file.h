#pragma once
// A graph on disk, without its trace: nodes, edges, tracks, the op table, each node's op and
// the replay origin, so that a loaded graph replays exactly as the saved one. What a node
// refers to in its trace (Node::name, event, parent_op) is saved as it is: meaningful only
// next to that trace.
//
// Format (version 2): little-endian binary, "DPROGRPH" then a u32 version, then sections
// (names, tracks, ops, nodes, node ops, edges), each a u32 count and fixed-layout records;
// strings are a u32 length and bytes; optional fields a u8 flag and the value. Files may be
// gzipped (detected by their magic bytes).
// Versions: 1, the first; 2 adds NodeKind::kUntraced (a byte value 1 does not have; the layout
// is the same). This build writes 2 and reads 1 and 2 (a version-1 graph keeps its untraced time
// as its ops' delays, which replays the same); a version it does not know is refused.
#include <string>
#include <string_view>

#include "graph/dfg.h"

namespace dpro::graph {

inline constexpr std::uint32_t kGraphFileVersion = 2;

std::string graph_to_bytes(const Dfg& dfg);
// Throws InputError naming `file` and the offending item ("node 12", "edge 7: dst 99 is not a
// node") for anything that is not a well-formed graph. The result is finalized.
Dfg graph_from_bytes(std::string_view bytes, const std::string& file);

// Throws InputError naming the file when it cannot be written or read. save_graph writes as
// every output does (core/output_file.h): over an existing file only when `replace`.
void save_graph(const Dfg& dfg, const std::string& path, bool replace = false);
Dfg load_graph(const std::string& path);

}  // namespace dpro::graph
