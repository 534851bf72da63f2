#include "gen/agc_selection.h"

#include <algorithm>
#include <initializer_list>

#include "rootio/root_file.h"
#include "rootio/storage.h"

namespace ferry::gen {
namespace {

struct Role {
  std::initializer_list<std::string_view> names;  // alternatives, preferred first
};

const Role kRoles[] = {
    {{"nJet"}},
    {{"Jet_pt"}},
    {{"Jet_eta"}},
    {{"Jet_phi"}},
    {{"Jet_mass"}},
    {{"Jet_btagCSVV2", "Jet_btagDeepB", "Jet_btagDeepFlavB"}},
    {{"nElectron"}},
    {{"Electron_pt"}},
    {{"Electron_eta"}},
    {{"Electron_phi"}},
    {{"Electron_cutBased", "Electron_cutBased_Sum16", "Electron_mvaFall17V2Iso_WP80"}},
    {{"nMuon"}},
    {{"Muon_pt"}},
    {{"Muon_eta"}},
    {{"Muon_phi"}},
    {{"Muon_tightId", "Muon_mediumId"}},
    {{"MET_pt", "PuppiMET_pt"}},
    {{"MET_phi", "PuppiMET_phi"}},
};

}  // namespace

std::vector<std::string> ResolveAgcSelection(std::span<const std::string> available,
                                             std::vector<std::string>* missing) {
  std::vector<std::string> out;
  for (const Role& role : kRoles) {
    bool found = false;
    for (std::string_view name : role.names) {
      if (std::find(available.begin(), available.end(), name) != available.end()) {
        out.emplace_back(name);
        found = true;
        break;
      }
    }
    if (!found && missing != nullptr) {
      missing->emplace_back(*role.names.begin());
    }
  }
  return out;
}

Result<AgcReport> MeasureAgcFraction(std::span<const std::string> files, std::string_view tree) {
  AgcReport r;
  bool resolved = false;
  for (const std::string& path : files) {
    auto f = FERRY_TRY(rootio::RootFile::OpenPath(path));
    auto t = FERRY_TRY(f->OpenTree(tree));
    const rootio::TreeInfo& info = t->info();
    std::vector<std::string> names;
    for (const rootio::Branch& b : info.branches) {
      names.push_back(b.name);
    }
    if (!resolved) {
      r.branches = ResolveAgcSelection(names, &r.missing);
      resolved = true;
    }
    auto storage = FERRY_TRY_CTX(rootio::SurveyStorage(*t), "file " + path);
    for (size_t i = 0; i < info.branches.size(); ++i) {
      r.total_bytes += storage[i].zbytes;
      if (std::find(r.branches.begin(), r.branches.end(), info.branches[i].name)
          != r.branches.end()) {
        r.selected_bytes += storage[i].zbytes;
      }
    }
  }
  r.fraction = r.total_bytes > 0
                   ? static_cast<double>(r.selected_bytes) / static_cast<double>(r.total_bytes)
                   : 0.0;
  return r;
}

}  // namespace ferry::gen
