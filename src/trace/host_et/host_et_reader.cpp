#include "trace/host_et/host_et_reader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace dpro::trace {

std::vector<HostEtComm> load_host_et_comms(const std::string& path) {
  nlohmann::json root = json_field::parse_json(read_whole_file(path), path, "", "host execution trace is not valid JSON");
  if (!root.is_object() || !root.contains("nodes") || !root["nodes"].is_array())
    throw InputError(path, "nodes", "not a host execution trace (no \"nodes\" array)");
  std::vector<std::pair<std::int64_t, HostEtComm>> found;
  std::size_t index = 0;
  for (const auto& node : root["nodes"]) {
    const std::string where = "nodes[" + std::to_string(index++) + "]";
    if (!node.is_object()) throw InputError(path, where, "not an object");
    const auto name = node.find("name");
    if (name == node.end()) continue;
    if (!name->is_string()) throw InputError(path, where, "\"name\" is not a string");
    if (!name->get_ref<const std::string&>().starts_with("nccl:")) continue;
    const std::string what = where + " (" + name->get<std::string>().substr(0, 60) + ")";
    const auto id = node.find("id");
    if (id != node.end() && !id->is_number_integer()) throw InputError(path, what, "\"id\" is not an integer");
    HostEtComm c;
    c.op = name->get<std::string>().substr(5);
    // A tensor input is [id, storage, offset, nelems, element size, device], possibly in a list.
    std::function<void(const nlohmann::json&)> add = [&](const nlohmann::json& v) {
      if (!v.is_array()) return;
      if (v.size() == 6 && v[0].is_number_integer() && v[5].is_string()) {
        if (!v[3].is_number_integer() || !v[4].is_number_integer() || v[3].get<std::int64_t>() < 0 ||
            v[4].get<std::int64_t>() < 1 || v[4].get<std::int64_t>() > 16)
          throw InputError(path, what, "tensor input " + v.dump().substr(0, 80) +
                                           ": its element count must be a whole number from 0 and its element size 1 to 16 bytes");
        const std::int64_t nelems = v[3].get<std::int64_t>(), size = v[4].get<std::int64_t>();
        if (nelems > (kMaxHostEtMessageBytes - c.bytes) / size)
          throw InputError(path, what, "inputs of more than 2^40 bytes: not a message size");
        c.bytes += nelems * size;
        return;
      }
      for (const auto& x : v) add(x);
    };
    if (node.contains("inputs")) add(node["inputs"]);
    found.emplace_back(id != node.end() ? id->get<std::int64_t>() : 0, c);
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<HostEtComm> out;
  for (auto& [id, c] : found) out.push_back(std::move(c));
  return out;
}

std::vector<std::string> expand_host_et_paths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      const std::size_t before = files.size();
      for (const auto& e : fs::directory_iterator(p)) {
        const std::string s = e.path().string();
        if (s.ends_with(".json") || s.ends_with(".json.gz")) files.push_back(s);
      }
      if (files.size() == before) throw InputError(p, "", "no .json or .json.gz host execution traces in this directory");
    } else if (!fs::exists(p)) {
      throw InputError(p, "", "no such file or directory");
    } else {
      files.push_back(p);
    }
  }
  auto last_number = [](const std::string& path) {
    const std::string name = fs::path(path).filename().string();
    std::int64_t value = -1, current = -1;
    for (char c : name) {
      if (std::isdigit(static_cast<unsigned char>(c)))  // saturating: a rank number has few digits
        current = std::min<std::int64_t>((current < 0 ? 0 : current * 10) + (c - '0'), std::int64_t{1} << 40);
      else if (current >= 0) { value = current; current = -1; }
    }
    return current >= 0 ? current : value;
  };
  std::stable_sort(files.begin(), files.end(), [&](const std::string& a, const std::string& b) {
    return last_number(a) != last_number(b) ? last_number(a) < last_number(b) : a < b;
  });
  return files;
}

}  // namespace dpro::trace
