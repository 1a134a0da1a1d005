#pragma once
// FNV-1a, 64 bits: a stable hash (the same on every machine and build) for keys and fingerprints
// that are stored or compared across runs. Not for adversarial inputs.
#include <cstdint>

namespace dpro {

struct Fnv1a {
  std::uint64_t value = 1469598103934665603ull;
  // Mixes the 8 bytes of `word`, least significant first.
  void add(std::uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      value ^= (word >> (8 * i)) & 0xff;
      value *= 1099511628211ull;
    }
  }
};

}  // namespace dpro
