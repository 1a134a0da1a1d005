#pragma once
// Choosing which ops to measure on a new GPU (after CDMPP): k-means over op features, then
// the op nearest each centre. Deterministic for a given seed.
#include <cstdint>
#include <vector>

#include "costmodel/op_desc.h"

namespace dpro::costmodel {

// Device-independent op features for clustering: log sizes and the family one-hot.
std::vector<float> op_cluster_features(const OpDesc& op);

// Indices (into `points`, each of the same dimension) of up to k distinct points, one per
// cluster of a k-means++ / Lloyd clustering (`iterations` rounds).
std::vector<std::size_t> kmeans_select(const std::vector<std::vector<float>>& points, int k,
                                       std::uint64_t seed, int iterations = 25);

}  // namespace dpro::costmodel
