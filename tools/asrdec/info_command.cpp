// `asrdec info`: version, build flags, devices and CUDA-graph support, as text or JSON.

#include <iostream>
#include <nlohmann/json.hpp>

#include "asrdec/asrdec.hpp"
#include "commands.hpp"

namespace asrdec::cli {
namespace {

nlohmann::json collect() {
  const CudaInfo& cuda = cuda_info();
  nlohmann::json info;
  const BuildInfo build = build_info();
  info["version"] = build.version;
  info["build"] = {{"type", build.build_type},
                   {"cxx_compiler", build.cxx_compiler},
                   {"cuda_compiled", build.cuda},
                   {"cuda_compiler", build.cuda_compiler},
                   {"cuda_architectures", build.cuda_architectures_list()}};
  info["cuda"] = {{"available", cuda.available},
                  {"reason", cuda.reason},
                  {"runtime_version", format_cuda_version(cuda.runtime_version)},
                  {"driver_version", format_cuda_version(cuda.driver_version)}};
  nlohmann::json devices = nlohmann::json::array();
  devices.push_back({{"device", "cpu"}, {"graph_modes", {"eager"}}});
  for (const CudaDeviceProperties& d : cuda.devices) {
    const Device device = Device::cuda(d.index);
    const GraphSupport support = graph_support(device);
    nlohmann::json modes = nlohmann::json::array();
    if (support.conditional) modes.push_back("conditional");
    if (support.graphs) modes.push_back("per_step");
    modes.push_back("eager");
    devices.push_back({{"device", device.to_string()},
                       {"name", d.name},
                       {"compute_capability",
                        std::to_string(d.compute_capability_major) + "." + std::to_string(d.compute_capability_minor)},
                       {"multiprocessors", d.multiprocessors},
                       {"memory_gib", static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0)},
                       {"graph_modes", modes},
                       {"auto_graph_mode", to_string(resolve_graph_mode(GraphMode::automatic, device))},
                       {"graph_support_note", support.reason}});
  }
  info["devices"] = devices;
  return info;
}

void print_text(const nlohmann::json& info) {
  std::cout << "asrdec " << info["version"].get<std::string>() << "\n";
  const auto& build = info["build"];
  std::cout << "build:   " << build["type"].get<std::string>() << ", " << build["cxx_compiler"].get<std::string>()
            << ", CUDA " << (build["cuda_compiled"].get<bool>() ? "on" : "off");
  if (build["cuda_compiled"].get<bool>()) {
    std::cout << " (" << build["cuda_compiler"].get<std::string>() << ", architectures "
              << build["cuda_architectures"].get<std::string>() << ")";
  }
  std::cout << "\n";
  const auto& cuda = info["cuda"];
  std::cout << "cuda:    runtime " << cuda["runtime_version"].get<std::string>() << ", driver "
            << cuda["driver_version"].get<std::string>();
  if (!cuda["available"].get<bool>()) {
    std::cout << "; " << cuda["reason"].get<std::string>();
  }
  std::cout << "\ndevices:\n";
  for (const auto& d : info["devices"]) {
    std::cout << "  " << d["device"].get<std::string>();
    if (d.contains("name")) {
      std::cout << "  " << d["name"].get<std::string>() << " (sm " << d["compute_capability"].get<std::string>() << ", "
                << d["multiprocessors"].get<int>() << " SMs)";
    }
    std::cout << "  graph modes:";
    for (const auto& mode : d["graph_modes"]) std::cout << " " << mode.get<std::string>();
    if (d.contains("auto_graph_mode")) {
      std::cout << "  (auto = " << d["auto_graph_mode"].get<std::string>() << ")";
      if (!d["graph_support_note"].get<std::string>().empty()) {
        std::cout << "  note: " << d["graph_support_note"].get<std::string>();
      }
    }
    std::cout << "\n";
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("info", "Print version, build flags, devices and CUDA-graph support");
  auto json = std::make_shared<bool>(false);
  command->add_flag("--json", *json, "Print one JSON object");
  command->callback([json] {
    const nlohmann::json info = collect();
    if (*json) {
      std::cout << info.dump() << "\n";
    } else {
      print_text(info);
    }
  });
}

}  // namespace asrdec::cli
