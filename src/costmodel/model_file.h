#pragma once
// The learned model's file (learned_model.h) without its networks: "DPROCM01\n", a one-line JSON
// header, then the payload (the LibTorch archives of the two networks' weights and the three
// residual memories, in that order). No LibTorch here: the torch build reads and writes the
// weights, this file everything around them, and checks it.
//
// Integrity: the payload has its size and FNV-1a hash in the header; the header has its own
// FNV-1a hash, "header_fnv1a", of the header as this writer dumps it with that field left out
// (format version 6). The header's figures price ops (floors, overheads, the datasheet figures
// of the trained GPUs), so an edited digit must fail the load like an edited weight. Version 5
// files, written before the header hash, are read without it (their fields still checked);
// `dpro-replay costmodel --model OLD upgrade -o NEW` rewrites one as version 6.
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "costmodel/op_desc.h"

namespace dpro::costmodel {

// The payload's sections, in file order.
enum ModelSection { kMainWeights, kUnseenWeights, kMemoryKernel, kMemoryPlain, kMemoryUnseen, kModelSections };
using ModelPayload = std::array<std::string, kModelSections>;

struct ModelFileHeader {
  int token_hidden = 0, head_hidden = 0;  // layer widths
  std::string provenance;
  std::set<std::string> known_devices;    // canonical names of the GPUs trained on
  // Per known device, its device_features (features.h); one entry for each known device.
  std::map<std::string, std::vector<float>> known_features;
  std::map<OpFamily, double> unseen_floor_ms;  // per family present (ms, above 0)
  std::map<std::string, double> overhead_ms;   // per known device that has one (ms, 0 or more)
};

// Bounds of the header's figures (a corrupted header must neither allocate gigabytes nor
// price every op at hours): layer widths, floors and overheads (ms; a floor above 0).
inline constexpr int kMaxLayerWidth = 4096;
inline constexpr double kMinFloorMs = 1e-6, kMaxFloorMs = 1000.0, kMaxOverheadMs = 1000.0;

std::uint64_t fnv1a(const std::string& bytes);

// The bytes of a model file (version 6, with the header hash).
std::string format_model_file(const ModelFileHeader& header, const ModelPayload& payload);

// Parses and checks the bytes of the model file `path`: magic, version, feature counts, header
// hash (version 6), payload size and hash, every field present and in range. Throws InputError
// naming `path` and the field. `payload` receives the sections.
ModelFileHeader parse_model_file(const std::string& bytes, const std::string& path, ModelPayload& payload);

}  // namespace dpro::costmodel
