#pragma once
// Strong ids (core/id.h) in test output: Catch2 prints a failed CHECK's ids, and INFO streams
// them, by their index ("none" for the none value). Test-only: the libraries never stream ids,
// so their outputs cannot change by how an id prints.
#include <ostream>

#include "core/id.h"

namespace dpro {

template <class Tag>
std::ostream& operator<<(std::ostream& out, Id<Tag> id) {
  if (!id.valid()) return out << "none";
  return out << id.value;
}

}  // namespace dpro
