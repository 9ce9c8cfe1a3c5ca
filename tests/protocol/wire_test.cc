// The checks every receiver makes on a frame (size before parsing, then parse,
// version and body), which refusals are answered, the measurement settings'
// defaults and limits, and the structured log format.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include "common/log.h"
#include "pipeline/builder.h"
#include "protocol/measurement_settings.h"

namespace schedfarm {
namespace {

Envelope SampleLease() {
  PipelineBuilder b("wire");
  b.Output(b.Relu(b.Input("x", {4, 8})));
  Envelope envelope;
  Lease& lease = *envelope.mutable_lease();
  lease.set_lease_id("lease-7");
  *lease.mutable_pipeline() = b.Finish().value();
  lease.mutable_settings()->set_samples(5);
  return envelope;
}

TEST(Wire, RoundTripsWithTheVersionSet) {
  const std::string frame = EncodeEnvelope(SampleLease());
  const DecodedFrame decoded = DecodeEnvelope(frame);
  ASSERT_TRUE(decoded.ok()) << decoded.error;
  EXPECT_EQ(decoded.envelope.version(), kProtocolVersion);
  EXPECT_EQ(decoded.envelope.lease().lease_id(), "lease-7");
  EXPECT_STREQ(BodyName(decoded.envelope), "lease");
}

TEST(Wire, RefusesOversizedFramesWithoutParsing) {
  const std::string frame = EncodeEnvelope(SampleLease());
  const DecodedFrame decoded = DecodeEnvelope(frame, frame.size() - 1);
  EXPECT_EQ(decoded.refusal, Refusal::kOversized);
  EXPECT_FALSE(decoded.envelope.has_lease());  // never parsed
  EXPECT_NE(decoded.error.find("exceeds the limit"), std::string::npos);
  EXPECT_TRUE(AnswerRefusal(decoded));
  EXPECT_TRUE(DecodeEnvelope(frame, frame.size()).ok());
}

TEST(Wire, EveryTruncationOfALeaseIsRefused) {
  const std::string frame = EncodeEnvelope(SampleLease());
  for (size_t n = 0; n < frame.size(); ++n) {
    const DecodedFrame decoded = DecodeEnvelope(frame.substr(0, n));
    EXPECT_FALSE(decoded.ok()) << "prefix of " << n << " of " << frame.size() << " bytes";
  }
}

TEST(Wire, GarbageIsDroppedNotAnswered) {
  const DecodedFrame decoded = DecodeEnvelope(std::string("\xff\xff\xff\xff garbage", 12));
  EXPECT_EQ(decoded.refusal, Refusal::kUnparseable);
  EXPECT_FALSE(AnswerRefusal(decoded));
}

TEST(Wire, RefusesOtherVersionsAndAnswersThem) {
  Envelope envelope = SampleLease();
  envelope.set_version(static_cast<SchemaVersion>(2));
  const DecodedFrame decoded = DecodeEnvelope(envelope.SerializeAsString());
  EXPECT_EQ(decoded.refusal, Refusal::kUnknownVersion);
  EXPECT_NE(decoded.error.find("protocol version 2 is not supported"), std::string::npos);
  EXPECT_EQ(decoded.envelope.lease().lease_id(), "lease-7");  // so the reply can name it
  EXPECT_TRUE(AnswerRefusal(decoded));
}

TEST(Wire, NeverAnswersAnErrorReply) {
  Envelope error = MakeErrorReply("bad", "lease-1");
  error.set_version(static_cast<SchemaVersion>(9));
  const DecodedFrame decoded = DecodeEnvelope(error.SerializeAsString());
  EXPECT_FALSE(decoded.ok());
  EXPECT_FALSE(AnswerRefusal(decoded));
}

TEST(Wire, RefusesAnEnvelopeWithoutBody) {
  Envelope empty;
  const DecodedFrame decoded = DecodeEnvelope(EncodeEnvelope(empty));
  EXPECT_EQ(decoded.refusal, Refusal::kNoBody);
  EXPECT_TRUE(AnswerRefusal(decoded));
}

TEST(MeasurementSettingsTest, FillsDefaultsAndKeepsGivenValues) {
  MeasurementSettings given;
  given.set_samples(20);
  given.set_flush_cache(true);
  const MeasurementSettings s = WithDefaults(given);
  EXPECT_EQ(s.samples(), 20);
  EXPECT_EQ(s.max_samples(), 30);
  EXPECT_EQ(s.threads(), 1);
  EXPECT_DOUBLE_EQ(s.min_sample_seconds(), 0.01);
  EXPECT_DOUBLE_EQ(s.target_cv(), 0.03);
  EXPECT_EQ(s.compile_timeout_ms(), 120000);
  EXPECT_EQ(s.run_timeout_ms(), 60000);
  EXPECT_TRUE(s.flush_cache());
  given.set_samples(50);
  EXPECT_EQ(WithDefaults(given).max_samples(), 50);
  EXPECT_TRUE(ValidateMeasurementSettings(WithDefaults(given)).ok());
}

TEST(MeasurementSettingsTest, RefusesImpossibleValuesNamingTheField) {
  struct Case {
    MeasurementSettings settings;
    std::string field;
  };
  std::vector<Case> cases(6);
  cases[0].settings.set_samples(-1), cases[0].field = "samples";
  cases[1].settings.set_samples(10), cases[1].settings.set_max_samples(5);
  cases[1].field = "max_samples";
  cases[2].settings.set_min_sample_seconds(-0.5), cases[2].field = "min_sample_seconds";
  cases[3].settings.set_threads(5000), cases[3].field = "threads";
  cases[4].settings.set_target_cv(2), cases[4].field = "target_cv";
  cases[5].settings.set_run_timeout_ms(-1), cases[5].field = "run_timeout_ms";
  for (const Case& c : cases) {
    const Status status = ValidateMeasurementSettings(c.settings);
    ASSERT_FALSE(status.ok()) << c.field;
    EXPECT_NE(status.message().find(c.field), std::string::npos) << status.message();
  }
}

TEST(Log, QuotesValuesThatNeedIt) {
  EXPECT_EQ(FormatLogFields({{"lease", "l-1"}, {"error", "bad \"x\" = 2"}, {"empty", ""}}),
            " lease=l-1 error=\"bad \\\"x\\\" = 2\" empty=\"\"");
  EXPECT_EQ(FormatLogFields({{"text", "a\nb"}}), " text=\"a\\nb\"");
}

}  // namespace
}  // namespace schedfarm
