#pragma once
// Rendering of evaluation results: Markdown for people, JSON for machines.
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/eval/evaluate.h"

namespace dpro::costmodel {

std::string render_markdown(const EvalReport& report);
nlohmann::json to_json(const EvalReport& report);

}  // namespace dpro::costmodel
