#include "gen/object_model.h"

#include <gtest/gtest.h>

#include "gen/template_fixture.h"

namespace ferry::gen {
namespace {

class ObjectModelTest : public TemplateTest {
 protected:
  void SetUp() override {
    TemplateTest::SetUp();
    if (!IsSkipped()) {
      model_ = BuildObjectModel(tmpl_);
    }
  }
  const CollectionModel& Collection(const std::string& name) const {
    for (const CollectionModel& c : model_.collections) {
      if (c.name == name) {
        return c;
      }
    }
    ADD_FAILURE() << "no collection " << name;
    return model_.collections.front();
  }
  int32_t Branch(const char* name) const {
    const int32_t b = tmpl_.Find(name);
    EXPECT_GE(b, 0) << name;
    return b;
  }
  const EventGroup& GroupOf(const char* name) const {
    return model_.groups[static_cast<size_t>(model_.group_of[static_cast<size_t>(Branch(name))])];
  }
  const FloatKernel& KernelOf(const char* name) const {
    return model_.kernels[static_cast<size_t>(Branch(name))];
  }
  ObjectModel model_;
};

TEST_F(ObjectModelTest, ReconstructedObjectsAreDrawnOneByOneAndSortedByPt) {
  for (const char* name : {"Jet", "Electron", "Muon", "Photon", "Tau"}) {
    const CollectionModel& c = Collection(name);
    EXPECT_FALSE(c.whole) << name;
    EXPECT_EQ(c.sort_key, Branch((std::string(name) + "_pt").c_str())) << name;
    EXPECT_EQ(c.counter, Branch((std::string("n") + name).c_str()));
  }
  const CollectionModel& jet = Collection("Jet");
  EXPECT_EQ(jet.members.size(), 40u);
  EXPECT_EQ(jet.first.back(), 537u);  // the template's jets
  // Multiplicity classes: each of at least 64 jets, and together every jet once.
  size_t objects = 0;
  for (const std::vector<uint32_t>& cls : jet.class_objects) {
    EXPECT_GE(cls.size(), kClassObjects);
    objects += cls.size();
  }
  EXPECT_EQ(objects, 537u);
  EXPECT_GT(jet.class_objects.size(), 3u);
}

TEST_F(ObjectModelTest, CollectionsWhoseOrderMeansSomethingAreKeptWhole) {
  EXPECT_TRUE(Collection("GenPart").whole);       // points into itself (genPartIdxMother)
  EXPECT_TRUE(Collection("LHEPart").whole);       // not ordered by pt
  EXPECT_TRUE(Collection("LHEPdfWeight").whole);  // a vector indexed by PDF member
  EXPECT_TRUE(Collection("PSWeight").whole);
  EXPECT_FALSE(Collection("OtherPV").whole);  // no pt, no order: objects
  EXPECT_EQ(Collection("OtherPV").sort_key, -1);
}

TEST_F(ObjectModelTest, IndicesKnowTheirTargets) {
  auto target = [&](const char* b) {
    const int32_t c = model_.index_target[static_cast<size_t>(Branch(b))];
    return c < 0 ? std::string() : model_.collections[static_cast<size_t>(c)].name;
  };
  EXPECT_EQ(target("Jet_muonIdx1"), "Muon");
  EXPECT_EQ(target("Electron_jetIdx"), "Jet");
  EXPECT_EQ(target("Electron_genPartIdx"), "GenPart");
  EXPECT_EQ(target("FatJet_genJetAK8Idx"), "GenJetAK8");
  EXPECT_EQ(target("GenPart_genPartIdxMother"), "GenPart");
  EXPECT_EQ(target("Jet_pt"), "");
}

TEST_F(ObjectModelTest, EventLevelBranchesComeInGroups) {
  EXPECT_EQ(&GroupOf("MET_pt"), &GroupOf("MET_phi"));
  EXPECT_EQ(&GroupOf("MET_pt"), &GroupOf("MET_sumEt"));
  EXPECT_NE(&GroupOf("MET_pt"), &GroupOf("PuppiMET_pt"));
  EXPECT_EQ(&GroupOf("PV_npvs"), &GroupOf("PV_z"));
  EXPECT_EQ(&GroupOf("HLT_Ele22_eta2p1_WPTight_Gsf"), &GroupOf("HLT_Ele27_WPLoose_Gsf"));
  // Generator-level branches come with the donor event, as the generator record does.
  const EventGroup& gen = GroupOf("genWeight");
  EXPECT_TRUE(gen.with_donor);
  EXPECT_EQ(&gen, &GroupOf("Generator_weight"));
  EXPECT_EQ(&gen, &GroupOf("LHEWeight_originalXWGTUP"));
  EXPECT_EQ(&gen, &GroupOf("GenMET_pt"));
  EXPECT_FALSE(GroupOf("MET_pt").with_donor);
  // Counters and the event ids belong to no group.
  EXPECT_EQ(model_.group_of[static_cast<size_t>(Branch("nJet"))], -1);
  EXPECT_EQ(model_.group_of[static_cast<size_t>(tmpl_.run)], -1);
}

TEST_F(ObjectModelTest, KernelsFollowWhatTheValuesAre) {
  EXPECT_EQ(KernelOf("Jet_pt").shape, FloatKernel::Shape::kScale);
  EXPECT_EQ(KernelOf("Jet_eta").shape, FloatKernel::Shape::kShift);
  EXPECT_EQ(KernelOf("Jet_phi").shape, FloatKernel::Shape::kAngle);
  EXPECT_EQ(KernelOf("MET_phi").shape, FloatKernel::Shape::kAngle);
  const FloatKernel& btag = KernelOf("Jet_btagCSVV2");
  EXPECT_EQ(btag.shape, FloatKernel::Shape::kShift);
  ASSERT_GE(btag.num_atoms, 1u);
  EXPECT_EQ(btag.atoms[0], -10);
  EXPECT_EQ(KernelOf("genWeight").shape, FloatKernel::Shape::kCopy);  // +-w: two values
  EXPECT_EQ(KernelOf("Pileup_nTrueInt").shape, FloatKernel::Shape::kCopy);
  EXPECT_EQ(KernelOf("Jet_pt").mantissa_bits, 10);
  // Resampled branches have centres and widths laid out as their template column.
  const size_t pt = static_cast<size_t>(Branch("Jet_pt"));
  EXPECT_EQ(model_.centres[pt].bytes.size(), tmpl_.branches[pt].values.bytes.size());
  EXPECT_EQ(model_.widths[pt].offsets, tmpl_.branches[pt].values.offsets);
  EXPECT_TRUE(model_.centres[static_cast<size_t>(Branch("genWeight"))].bytes.empty());
}

}  // namespace
}  // namespace ferry::gen
