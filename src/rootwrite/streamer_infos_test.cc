#include "rootwrite/streamer_infos.h"

#include <array>
#include <map>

#include <gtest/gtest.h>

#include "rootio/cursor.h"
#include "rootio/key.h"
#include "rootio/object_stream.h"
#include "rootio/root_file.h"
#include "testing/testing.h"

namespace ferry::rootwrite {
namespace {

// A TStreamerElement as parsed back, for comparisons.
struct Element {
  std::string element_class;
  std::string name;
  std::string title;
  int32_t type = 0;
  int32_t size = 0;
  int32_t array_length = 0;
  int32_t array_dim = 0;
  std::array<int32_t, 5> max_index{};
  std::string type_name;
  std::string extra;  // base version, or counter version/name/class
  bool operator==(const Element&) const = default;
};

struct Info {
  uint32_t checksum = 0;
  int32_t version = 0;
  std::vector<Element> elements;
};

// Parses a StreamerInfo TList payload (ROOT's or ours) into class name -> Info.
std::map<std::string, Info> ParseList(std::span<const uint8_t> payload, uint32_t key_len) {
  std::map<std::string, Info> out;
  rootio::Cursor c(payload);
  rootio::TagReader tags(key_len);
  rootio::ReadFramed(c);
  rootio::SkipTObject(c);
  (void)c.TString();
  int32_t n = c.I32();
  for (int32_t i = 0; i < n && c.ok(); ++i) {
    auto tag = tags.Read(c);
    EXPECT_TRUE(tag.has_value());
    if (!tag.has_value()) {
      return out;
    }
    if (tag->kind == rootio::ObjectTag::Kind::kNew && tag->class_name == "TStreamerInfo") {
      rootio::ReadFramed(c);
      std::string name, title;
      EXPECT_TRUE(rootio::ReadTNamed(c, &name, &title).has_value());
      Info& info = out[name];
      info.checksum = c.U32();
      info.version = c.I32();
      auto arr = tags.Read(c);
      EXPECT_TRUE(arr.has_value() && arr->class_name == "TObjArray");
      rootio::ReadFramed(c);
      rootio::SkipTObject(c);
      (void)c.TString();
      int32_t ne = c.I32();
      (void)c.I32();
      for (int32_t j = 0; j < ne && c.ok(); ++j) {
        auto et = tags.Read(c);
        EXPECT_TRUE(et.has_value());
        Element e;
        e.element_class = et->class_name;
        rootio::ReadFramed(c);  // the element class
        rootio::ReadFramed(c);  // TStreamerElement
        EXPECT_TRUE(rootio::ReadTNamed(c, &e.name, &e.title).has_value());
        e.type = c.I32();
        e.size = c.I32();
        e.array_length = c.I32();
        e.array_dim = c.I32();
        for (auto& m : e.max_index) {
          m = c.I32();
        }
        e.type_name = c.TString();
        if (e.element_class == "TStreamerBase") {
          e.extra = std::to_string(c.I32());
        } else if (e.element_class == "TStreamerBasicPointer") {
          e.extra = std::to_string(c.I32());
          e.extra += " " + std::string(c.TString());
          e.extra += " " + std::string(c.TString());
        } else if (e.element_class == "TStreamerSTL") {
          e.extra = std::to_string(c.I32());
          e.extra += " " + std::to_string(c.I32());
        }
        EXPECT_EQ(c.pos(), et->end) << name << "." << e.name;
        c.Seek(et->end);
        info.elements.push_back(std::move(e));
      }
    }
    if (tag->kind == rootio::ObjectTag::Kind::kNew) {
      c.Seek(tag->end);
    }
    uint8_t option = c.U8();
    c.Skip(option);
  }
  EXPECT_TRUE(c.ok());
  return out;
}

std::map<std::string, Info> ParseFileList(const std::string& path) {
  auto f = rootio::RootFile::OpenPath(path);
  EXPECT_TRUE(f.has_value());
  if (!f.has_value()) {
    return {};
  }
  auto key = rootio::ReadKey((*f)->source(), (*f)->header().seek_info);
  EXPECT_TRUE(key.has_value());
  auto payload = (*f)->ReadObject(*key);
  EXPECT_TRUE(payload.has_value());
  return ParseList(*payload, key->keylen);
}

std::vector<std::string> AllLeaves() {
  return {"TLeafO", "TLeafB", "TLeafS", "TLeafI", "TLeafL", "TLeafF", "TLeafD", "TLeafC"};
}

TEST(StreamerInfos, EveryClassWrittenHasADescription) {
  for (const std::string& c : FlatTreeClasses(AllLeaves())) {
    EXPECT_NE(FindClassDesc(c), nullptr) << c;
  }
  EXPECT_FALSE(BuildStreamerInfoList(std::vector<std::string>{"TH1F"}, 64).has_value());
}

TEST(StreamerInfos, ListParsesBackWithConsistentFraming) {
  auto classes = FlatTreeClasses(AllLeaves());
  auto payload = BuildStreamerInfoList(classes, 64);
  ASSERT_TRUE(payload.has_value());
  auto parsed = ParseList(*payload, 64);
  EXPECT_EQ(parsed.size(), classes.size());
  EXPECT_EQ(parsed["TTree"].version, 20);
  EXPECT_EQ(parsed["TTree"].elements.size(), 33u);
  EXPECT_EQ(parsed["TBranch"].elements.size(), 22u);
  EXPECT_EQ(parsed["TLeaf"].elements.size(), 7u);
}

// The descriptions match, member for member, what ROOT 6 itself wrote into the real files.
TEST(StreamerInfos, MatchWhatRootWrites) {
  FERRY_REQUIRE_ROOT_DATA();
  std::map<std::string, Info> root;
  for (const char* name : {"nanoAOD_2015_CMS_Open_Data_ttbar.root",
                           "uproot-sample-6.20.04-zlib.root", "nano_dy.root"}) {
    for (auto& [cls, info] : ParseFileList(testing::RootDataFile(name))) {
      root.emplace(cls, info);
    }
  }
  auto classes = FlatTreeClasses(AllLeaves());
  auto payload = BuildStreamerInfoList(classes, 64);
  ASSERT_TRUE(payload.has_value());
  auto ours = ParseList(*payload, 64);
  for (const std::string& cls : classes) {
    SCOPED_TRACE(cls);
    auto it = root.find(cls);
    ASSERT_NE(it, root.end()) << "no ROOT-written reference for " << cls;
    EXPECT_EQ(ours[cls].checksum, it->second.checksum);
    EXPECT_EQ(ours[cls].version, it->second.version);
    ASSERT_EQ(ours[cls].elements.size(), it->second.elements.size());
    for (size_t i = 0; i < ours[cls].elements.size(); ++i) {
      const Element& a = ours[cls].elements[i];
      const Element& b = it->second.elements[i];
      EXPECT_EQ(a, b) << "element " << i << ": ours " << a.element_class << " " << a.name << " '"
                      << a.title << "' type " << a.type << " size " << a.size << " '" << a.type_name
                      << "' " << a.extra << " / ROOT " << b.element_class << " " << b.name << " '"
                      << b.title << "' type " << b.type << " size " << b.size << " '" << b.type_name
                      << "' " << b.extra;
    }
  }
}

}  // namespace
}  // namespace ferry::rootwrite
