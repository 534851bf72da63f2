// TemplateTest (test code): a gtest fixture holding the default template
// (nanoAOD_2015_CMS_Open_Data_ttbar.root, loaded once per test), skipped where the real ROOT
// files of data/root are absent.
#pragma once

#include <utility>

#include <gtest/gtest.h>

#include "gen/event_template.h"
#include "testing/testing.h"

namespace ferry::gen {

class TemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::RootDataDir().empty()) {
      GTEST_SKIP() << "data/root not present";
    }
    auto t = LoadTemplate(testing::RootDataFile("nanoAOD_2015_CMS_Open_Data_ttbar.root"));
    ASSERT_TRUE(t.has_value()) << t.error().ToString();
    tmpl_ = std::move(*t);
  }
  EventTemplate tmpl_;
};

}  // namespace ferry::gen
