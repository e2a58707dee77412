// Marker protocol and meter-CSV parsers: examples, error lines, and properties.
#include <gtest/gtest.h>

#include "jouleprof/measure/markers.hpp"
#include "jouleprof/sensors/meter_csv.hpp"
#ifdef JOULEPROF_HAVE_RAPIDCHECK
#include <rapidcheck/gtest.h>
#endif

using namespace jouleprof;

TEST(Markers, ParsesTheProtocol) {
  auto b = parse_marker_line("begin prefill");
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->kind, Marker::Kind::begin);
  EXPECT_EQ((*b)->name, "prefill");
  EXPECT_FALSE((*b)->unix_s);
  auto e = parse_marker_line("end decode/step.3 t=1763790000.125\r");
  ASSERT_TRUE(e && *e);
  EXPECT_EQ((*e)->kind, Marker::Kind::end);
  EXPECT_DOUBLE_EQ(*(*e)->unix_s, 1763790000.125);
  auto c = parse_marker_line("count tokens 128 decode");
  ASSERT_TRUE(c && *c);
  EXPECT_EQ((*c)->key, "tokens");
  EXPECT_EQ((*c)->value, 128);
  EXPECT_EQ((*c)->name, "decode");
  auto blank = parse_marker_line("   # nothing");
  ASSERT_TRUE(blank);
  EXPECT_FALSE(*blank);
}

TEST(Markers, RejectsBadLines) {
  for (const char* bad : {"start x", "begin", "begin a b c", "begin <script>", "end x t=abc", "count tokens",
                          "count tokens -1", "count tokens 1 bad name", "begin x t=-5"}) {
    EXPECT_FALSE(parse_marker_line(bad)) << bad;
  }
}

TEST(MeterCsv, ReadsWattsUpLogs) {
  MeterCsvOptions o;
  o.utc = true;
  auto r = parse_meter_csv("time,id,pm1,pm2,sum\n2026-02-04 10:15:23,0,125.3,118.7,244.0\n"
                           "2026-02-04 10:15:24.5,1,126.1,119.2,245.3\n", o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->column, "sum");
  ASSERT_EQ(r->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(r->samples[0].t_s, 1770200123.0);  // 2026-02-04T10:15:23Z
  EXPECT_DOUBLE_EQ(r->samples[1].t_s - r->samples[0].t_s, 1.5);
  EXPECT_DOUBLE_EQ(r->samples[1].value, 245.3);
  o.power_column = "pm1";
  o.clock_offset_s = 2;
  auto p = parse_meter_csv("timestamp,pm1\n1770200123.5,100\n", o);
  ASSERT_TRUE(p);
  EXPECT_DOUBLE_EQ(p->samples[0].t_s, 1770200125.5);
}

TEST(MeterCsv, ErrorsNameTheLine) {
  MeterCsvOptions o;
  auto r = parse_meter_csv("time,id,pm1,pm2,sum\n2026-02-04 10:15:23,0,1,2,3\n2026-02-04 10:15:24,1,1,2\n", o, "log.csv");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "log.csv line 3: expected 5 fields, found 4");
  auto t = parse_meter_csv("time,sum\nyesterday,3\n", o, "log.csv");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("line 2: bad time"), std::string::npos);
  EXPECT_FALSE(parse_meter_csv("", o));
  EXPECT_FALSE(parse_meter_csv("time,volts\n1,2\n", o));
  EXPECT_FALSE(parse_meter_csv("time,sum\n5,1\n4,1\n", o));  // time goes backwards
  EXPECT_FALSE(parse_meter_csv("time,sum\n5,-1\n", o));
}

#ifdef JOULEPROF_HAVE_RAPIDCHECK
RC_GTEST_PROP(MarkerProperty, NeverCrashes, (const std::string& line)) { (void)parse_marker_line(line); }

RC_GTEST_PROP(MarkerProperty, ValidLinesRoundTrip, ()) {
  const auto name = *rc::gen::nonEmpty(rc::gen::container<std::string>(rc::gen::elementOf(std::string("abcXYZ019_-.:/"))));
  RC_PRE(name.size() <= 128);
  const int verb = *rc::gen::inRange(0, 2);
  auto r = parse_marker_line(std::string(verb ? "end " : "begin ") + name);
  RC_ASSERT(r.ok() && r->has_value());
  RC_ASSERT((*r)->name == name);
}

RC_GTEST_PROP(MeterProperty, NeverCrashesAndErrorsNameTheSource, (const std::string& body)) {
  auto r = parse_meter_csv("time,sum\n" + body, MeterCsvOptions{}, "m.csv");
  if (!r) RC_ASSERT(r.error().message.rfind("m.csv", 0) == 0);
}

RC_GTEST_PROP(MeterProperty, GeneratedLogsParseBack, ()) {
  const auto watts = *rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 5000)));
  std::string text = "time,id,pm1,pm2,sum\n";
  for (std::size_t i = 0; i < watts.size(); ++i) {
    text += std::to_string(1700000000 + i) + "," + std::to_string(i) + ",1,2," + std::to_string(watts[i]) + "\n";
  }
  auto r = parse_meter_csv(text, MeterCsvOptions{});
  RC_ASSERT(r.ok());
  RC_ASSERT(r->samples.size() == watts.size());
  for (std::size_t i = 0; i < watts.size(); ++i) RC_ASSERT(r->samples[i].value == watts[i]);
}
#endif
