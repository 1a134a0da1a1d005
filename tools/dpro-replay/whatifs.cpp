#include "whatif_option.h"

namespace dpro::cli {

std::vector<std::unique_ptr<WhatIfOption>> make_whatif_options() {
  std::vector<std::unique_ptr<WhatIfOption>> options;
  return options;
}

}  // namespace dpro::cli
