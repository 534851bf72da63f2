#include "gen/agc_selection.h"

#include <algorithm>
#include <initializer_list>

#include "rootio/dataset.h"

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

namespace {

// Adds one file's bytes of every branch or field and of the selection's (resolved from the
// first file's names) to r.
Status AddFile(const std::string& path, std::string_view tree, bool* resolved, AgcReport* r) {
  std::unique_ptr<rootio::Dataset> data = FERRY_TRY(rootio::Dataset::OpenPath(path, tree));
  // Per name, the storage units (a TTree's branch, an RNTuple's columns) it reads.
  const rootio::StorageSurvey survey = FERRY_TRY(data->SurveyStorage());
  const std::vector<std::string>& names = survey.fields;
  const std::vector<std::vector<bool>>& uses = survey.uses;
  const std::vector<uint64_t>& bytes = survey.unit_bytes;
  if (!*resolved) {
    r->branches = ResolveAgcSelection(names, &r->missing);
    *resolved = true;
  }
  std::vector<bool> selected(bytes.size(), false);
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(r->branches.begin(), r->branches.end(), names[i]) != r->branches.end()) {
      for (size_t c = 0; c < bytes.size(); ++c) {
        selected[c] = selected[c] || uses[i][c];
      }
    }
  }
  for (size_t c = 0; c < bytes.size(); ++c) {
    r->total_bytes += bytes[c];
    r->selected_bytes += selected[c] ? bytes[c] : 0;
  }
  return OkStatus();
}

}  // namespace

Result<AgcReport> MeasureAgcFraction(std::span<const std::string> files, std::string_view tree) {
  AgcReport r;
  bool resolved = false;
  for (const std::string& path : files) {
    FERRY_TRY_CTX(AddFile(path, tree, &resolved, &r), "file " + path);
  }
  r.fraction = r.total_bytes > 0
                   ? static_cast<double>(r.selected_bytes) / static_cast<double>(r.total_bytes)
                   : 0.0;
  return r;
}

}  // namespace ferry::gen
