#include "gen/object_resampler.h"

#include <cmath>
#include <cstring>
#include <set>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "gen/event_resampler.h"
#include "gen/template_fixture.h"

namespace ferry::gen {
namespace {

class ObjectResamplerTest : public TemplateTest {
 protected:
  // Two batches (300 then 2000 events) of a resampler; the second one.
  std::vector<rootio::Column> Batch(Resampler& r, uint64_t seed) const {
    EventIdSequence ids(seed);
    std::vector<rootio::Column> cols;
    r.NextBatch(300, ids, &cols);
    r.NextBatch(2000, ids, &cols);
    return cols;
  }
  std::vector<rootio::Column> Batch(uint64_t seed) const {
    ObjectResampler r(tmpl_, seed);
    return Batch(r, seed);
  }
  const rootio::Column& Col(const std::vector<rootio::Column>& cols, const char* name) const {
    return cols[static_cast<size_t>(tmpl_.Find(name))];
  }
  const rootio::Column& Tmpl(const char* name) const {
    return tmpl_.branches[static_cast<size_t>(tmpl_.Find(name))].values;
  }
};

TEST_F(ObjectResamplerTest, CountersMatchCollectionsAndSeedsDecide) {
  const std::vector<rootio::Column> a = Batch(9), b = Batch(9), c = Batch(10);
  ASSERT_EQ(a.size(), tmpl_.branches.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    const rootwrite::BranchSpec& s = tmpl_.branches[i].spec;
    ASSERT_EQ(a[i].bytes, b[i].bytes) << s.name;
    ASSERT_EQ(a[i].offsets, b[i].offsets) << s.name;
    ASSERT_EQ(a[i].num_entries, 2000) << s.name;
    ASSERT_EQ(a[i].type, s.type) << s.name;
    differs = differs || a[i].bytes != c[i].bytes;
    if (!s.count.empty()) {
      const rootio::Column& cnt = a[static_cast<size_t>(tmpl_.Find(s.count))];
      ASSERT_EQ(a[i].offsets.size(), 2001u) << s.name;
      for (int64_t e = 0; e < 2000; ++e) {
        auto [lo, hi] = a[i].EntryValues(e);
        ASSERT_EQ(hi - lo, cnt.AsUint64(static_cast<size_t>(e)) * static_cast<uint64_t>(s.len))
            << s.name;
      }
    }
  }
  EXPECT_TRUE(differs);
}

TEST_F(ObjectResamplerTest, EventNumbersAreThoseOfTheWholeEventModel) {
  EventResampler whole(tmpl_, 4);
  const std::vector<rootio::Column> a = Batch(4), b = Batch(whole, 4);
  for (const char* id : {"run", "luminosityBlock", "event"}) {
    EXPECT_EQ(Col(a, id).bytes, Col(b, id).bytes) << id;
  }
}

TEST_F(ObjectResamplerTest, ObjectsKeepTheirBranchesTogetherAndArePtOrdered) {
  const std::vector<rootio::Column> a = Batch(5);
  // Integer branches of a jet are copied: each new jet's (jetId, puId, hadronFlavour,
  // partonFlavour, nConstituents) is that of one template jet.
  const char* ints[] = {"Jet_jetId", "Jet_puId", "Jet_hadronFlavour", "Jet_partonFlavour",
                        "Jet_nConstituents"};
  auto tuple_at = [&](auto col, size_t k) {
    std::vector<double> t;
    for (const char* name : ints) {
      t.push_back(col(name).AsDouble(k));
    }
    return t;
  };
  std::set<std::vector<double>> known;
  for (size_t k = 0; k < Tmpl("Jet_pt").num_values(); ++k) {
    known.insert(tuple_at([&](const char* n) -> const rootio::Column& { return Tmpl(n); }, k));
  }
  const rootio::Column& pt = Col(a, "Jet_pt");
  ASSERT_GT(pt.num_values(), 3000u);
  for (size_t k = 0; k < pt.num_values(); ++k) {
    ASSERT_TRUE(
        known.count(tuple_at([&](const char* n) -> const rootio::Column& { return Col(a, n); }, k)))
        << "jet " << k;
  }
  // Sorted by their new pt, like NanoAOD's, and continuous: several times as many distinct
  // values as the template's 537 jets (at its 10-bit precision, 15-60 GeV holds ~2,500).
  std::set<float> distinct;
  for (int64_t e = 0; e < pt.num_entries; ++e) {
    auto [lo, hi] = pt.EntryValues(e);
    for (uint64_t k = lo; k < hi; ++k) {
      distinct.insert(pt.values<float>()[k]);
      if (k > lo) {
        ASSERT_GE(pt.values<float>()[k - 1], pt.values<float>()[k]) << "event " << e;
      }
    }
  }
  EXPECT_GT(distinct.size(), 3 * 537u);
}

TEST_F(ObjectResamplerTest, IndicesStayWithinTheirTargets) {
  const std::vector<rootio::Column> a = Batch(6);
  const std::pair<const char*, const char*> links[] = {{"Jet_muonIdx1", "nMuon"},
                                                       {"Jet_electronIdx1", "nElectron"},
                                                       {"Electron_jetIdx", "nJet"},
                                                       {"Electron_genPartIdx", "nGenPart"},
                                                       {"GenPart_genPartIdxMother", "nGenPart"}};
  for (auto [branch, counter] : links) {
    const rootio::Column& idx = Col(a, branch);
    const rootio::Column& n = Col(a, counter);
    for (int64_t e = 0; e < idx.num_entries; ++e) {
      auto [lo, hi] = idx.EntryValues(e);
      for (uint64_t k = lo; k < hi; ++k) {
        const int32_t v = idx.values<int32_t>()[k];
        ASSERT_GE(v, -1) << branch;
        ASSERT_LT(v, static_cast<int64_t>(n.AsUint64(static_cast<size_t>(e)))) << branch;
      }
    }
  }
}

TEST_F(ObjectResamplerTest, EventLevelGroupsComeFromOneTemplateEvent) {
  const std::vector<rootio::Column> a = Batch(7);
  // PV_npvs and PV_npvsGood (integers, copied) of a new event are a pair of one template event.
  std::set<std::pair<int32_t, int32_t>> pairs;
  for (int64_t e = 0; e < tmpl_.entries; ++e) {
    pairs.emplace(Tmpl("PV_npvs").values<int32_t>()[static_cast<size_t>(e)],
                  Tmpl("PV_npvsGood").values<int32_t>()[static_cast<size_t>(e)]);
  }
  for (int64_t e = 0; e < 2000; ++e) {
    ASSERT_TRUE(pairs.count({Col(a, "PV_npvs").values<int32_t>()[static_cast<size_t>(e)],
                             Col(a, "PV_npvsGood").values<int32_t>()[static_cast<size_t>(e)]}));
  }
  // The generator-level weights agree in sign within an event (one donor), and are kept
  // exactly (+-w are the only two values: not smoothed).
  for (int64_t e = 0; e < 2000; ++e) {
    const float gw = Col(a, "genWeight").values<float>()[static_cast<size_t>(e)];
    const float lw = Col(a, "LHEWeight_originalXWGTUP").values<float>()[static_cast<size_t>(e)];
    ASSERT_EQ(gw, lw);
    ASSERT_EQ(std::fabs(gw), std::fabs(Tmpl("genWeight").values<float>()[0]));
  }
}

TEST_F(ObjectResamplerTest, WholeCollectionsMoveCoherently) {
  // A new event's GenPart is its donor's, with one pt scale and one phi rotation for all its
  // particles: among the template events with its pdgId and mother sequence (a few events
  // share one), one must match with a common ratio and turn.
  const std::vector<rootio::Column> a = Batch(8);
  const rootio::Column& id = Col(a, "GenPart_pdgId");
  const rootio::Column& mother = Col(a, "GenPart_genPartIdxMother");
  const rootio::Column& pt = Col(a, "GenPart_pt");
  const rootio::Column& phi = Col(a, "GenPart_phi");
  auto same = [](const rootio::Column& x, uint64_t at, const rootio::Column& y, uint64_t from,
                 uint64_t n) {
    return std::memcmp(x.bytes.data() + 4 * at, y.bytes.data() + 4 * from, 4 * n) == 0;
  };
  // New event e moved coherently from template event t: pts (above 1 GeV; zero stays zero)
  // in one ratio, phis turned by one angle (at GenPart's 8-bit phi precision).
  auto coherent = [&](int64_t e, int64_t t) {
    auto [lo, hi] = id.EntryValues(e);
    const uint64_t tlo = Tmpl("GenPart_pdgId").EntryValues(t).first;
    double ratio = 0, turn = 0;
    for (uint64_t k = 0; k < hi - lo; ++k) {
      const double p0 = Tmpl("GenPart_pt").values<float>()[tlo + k];
      if (p0 <= 1) {
        continue;
      }
      const double r = pt.values<float>()[lo + k] / p0;
      const double w = std::remainder(
          phi.values<float>()[lo + k] - Tmpl("GenPart_phi").values<float>()[tlo + k], 2 * M_PI);
      if (ratio == 0) {
        ratio = r, turn = w;
      } else if (std::fabs(r - ratio) > 0.01 * ratio
                 || std::fabs(std::remainder(w - turn, 2 * M_PI)) > 0.03) {
        return false;
      }
    }
    return ratio > 0;
  };
  int checked = 0;
  for (int64_t e = 0; e < 200; ++e) {
    auto [lo, hi] = id.EntryValues(e);
    if (hi - lo < 6) {
      continue;
    }
    bool found = false;
    for (int64_t t = 0; t < tmpl_.entries && !found; ++t) {
      auto [tlo, thi] = Tmpl("GenPart_pdgId").EntryValues(t);
      found = thi - tlo == hi - lo && same(id, lo, Tmpl("GenPart_pdgId"), tlo, hi - lo)
              && same(mother, lo, Tmpl("GenPart_genPartIdxMother"), tlo, hi - lo) && coherent(e, t);
    }
    EXPECT_TRUE(found) << "event " << e;
    ++checked;
  }
  EXPECT_GE(checked, 100);
}

}  // namespace
}  // namespace ferry::gen
