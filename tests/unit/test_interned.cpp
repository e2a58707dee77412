// core/interned.hpp: one copy per distinct value, compared and converted like std::string.
#include "jouleprof/core/interned.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

using jouleprof::Interned;

TEST(Interned, EqualValuesShareOneCopy) {
  const std::string built = std::string("model.layers.") + std::to_string(3) + ".mlp";
  const Interned a(built), b("model.layers.3.mlp"), c(std::string_view("model.layers.4.mlp"));
  EXPECT_EQ(&a.str(), &b.str());
  EXPECT_NE(&a.str(), &c.str());
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  EXPECT_TRUE(a == "model.layers.3.mlp");
  EXPECT_TRUE(a == built);
}

TEST(Interned, DefaultIsTheEmptyString) {
  const Interned e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.size(), 0u);
  EXPECT_TRUE(e == Interned(""));
  EXPECT_STREQ(e.c_str(), "");
}

TEST(Interned, OrdersAndHashesByValue) {
  std::set<Interned> s{Interned("b"), Interned("a"), Interned("c"), Interned("a")};
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.begin()->str(), "a");
  std::unordered_set<Interned> h{Interned("x"), Interned("x"), Interned("y")};
  EXPECT_EQ(h.size(), 2u);
  std::map<std::string, int> m;
  ++m[Interned("gemm")];  // converts where a std::string goes
  EXPECT_EQ(m.at("gemm"), 1);
  EXPECT_EQ(Interned("memcpy ") + "DtoD", "memcpy DtoD");
}

TEST(Interned, ThreadsInterningTheSameValuesGetTheSameCopies) {
  std::vector<std::vector<const std::string*>> seen(4);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([t, &seen] {
      for (int i = 0; i < 2000; ++i) seen[static_cast<size_t>(t)].push_back(&Interned("k" + std::to_string(i % 100)).str());
    });
  }
  for (auto& t : ts) t.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(seen[0], seen[static_cast<size_t>(t)]);
}
