#include "gen/agc_selection.h"

#include <algorithm>
#include <initializer_list>

#include "rootio/rntuple.h"
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

namespace {

// Stored bytes per name, and the names, of a TTree's branches.
Status SurveyTree(const rootio::RootFile& f,
                  std::string_view tree,
                  std::vector<std::string>* names,
                  std::vector<uint64_t>* bytes) {
  auto t = FERRY_TRY(f.OpenTree(tree));
  auto storage = FERRY_TRY(rootio::SurveyStorage(*t));
  for (size_t i = 0; i < t->info().branches.size(); ++i) {
    names->push_back(t->info().branches[i].name);
    bytes->push_back(storage[i].zbytes);
  }
  return OkStatus();
}

// The physical columns of a field and of its subfields (alias columns resolved).
void CollectColumns(const rootio::Rntuple& r, uint32_t field, std::vector<bool>* used) {
  for (size_t rep = 0; rep < r.RepresentationCount(field); ++rep) {
    for (uint32_t c : r.Representation(field, rep)) {
      (*used)[c] = true;
    }
  }
  for (uint32_t child : r.Children(field)) {
    CollectColumns(r, child, used);
  }
}

// The names of an RNTuple's top-level fields, the physical columns each reads (a projected
// RVec: its collection's offsets and its member; a cardinality: the offsets) and the stored
// bytes of every column.
Status SurveyRntuple(const rootio::RootFile& f,
                     std::string_view name,
                     std::vector<std::string>* names,
                     std::vector<std::vector<bool>>* columns,
                     std::vector<uint64_t>* column_bytes) {
  auto r = FERRY_TRY(rootio::Rntuple::Open(f, name));
  column_bytes->assign(r->columns().size(), 0);
  for (const rootio::ClusterInfo& c : r->clusters()) {
    for (size_t k = 0; k < c.columns.size(); ++k) {
      for (const rootio::PageInfo& p : c.columns[k].pages) {
        (*column_bytes)[k] += p.locator.size;
      }
    }
  }
  for (uint32_t id : r->TopLevelFields()) {
    names->push_back(r->fields()[id].name);
    columns->emplace_back(r->columns().size(), false);
    CollectColumns(*r, id, &columns->back());
  }
  return OkStatus();
}

// Adds one file's bytes of every branch or field and of the selection's (resolved from the
// first file's names) to r.
Status AddFile(const std::string& path, std::string_view tree, bool* resolved, AgcReport* r) {
  auto f = FERRY_TRY(rootio::RootFile::OpenPath(path));
  auto key = FERRY_TRY(f->FindKey(tree));
  std::vector<std::string> names;
  // Per name, the columns (RNTuple) it reads; a TTree branch is its own single "column".
  std::vector<std::vector<bool>> uses;
  std::vector<uint64_t> bytes;
  if (key.class_name == rootio::kRntupleClassName) {
    FERRY_TRY(SurveyRntuple(*f, tree, &names, &uses, &bytes));
  } else {
    FERRY_TRY(SurveyTree(*f, tree, &names, &bytes));
    for (size_t i = 0; i < names.size(); ++i) {
      uses.emplace_back(names.size(), false);
      uses.back()[i] = true;
    }
  }
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
