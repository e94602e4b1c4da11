/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 */
package dev.splitaudit.usersjob;

import dev.splitaudit.lineage.KafkaLineage;
import dev.splitaudit.lineage.ReaderStamped;
import dev.splitaudit.lineage.ReaderStamping;
import dev.splitaudit.lineage.WithKafkaLineage;
import java.util.HashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.beam.runners.flink.FlinkRunner;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.coders.SerializableCoder;
import org.apache.beam.sdk.coders.StringUtf8Coder;
import org.apache.beam.sdk.extensions.avro.coders.AvroCoder;
import org.apache.beam.sdk.io.FileIO;
import org.apache.beam.sdk.io.TextIO;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.io.parquet.ParquetIO;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PipelineOptionsValidator;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Values;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.joda.time.Duration;

/**
 * A weather job shaped like the ones users run on Flink, and not like splitaudit's reference pipeline: its
 * outputs carry no Kafka coordinates and no lineage.
 *
 * <pre>
 *   Read            KafkaIO.read of the input topic (JSON weather records), keys and values as strings, each
 *                   record's event time its log-append time; the consumer as --consumer says (none, group,
 *                   earliest)
 *   Values          the record values (without --lineage)
 *   Lineage         the lineage kit's columns of each record (only with --lineage=true)
 *   ParseWeather    Jackson parses each value and maps it to a WeatherReport (Celsius and Fahrenheit)
 *   FormatJson      one JSON line per report
 *   WriteToKafka    KafkaIO.write of the lines to the output topic (values only)
 *   WindowJson      fixed windows of --windowSeconds over the lines
 *   WriteText       TextIO, windowed writes, one shard per window, Beam's default names:
 *                   weather{start}-{end}-pane-{i}[-last]-00000-of-00001.json in --textDir
 *   ToParquetRecord the report as an Avro record
 *   Window          fixed windows of --windowSeconds
 *   WriteParquet    FileIO + ParquetIO.sink, one shard per window, FileIO's default names:
 *                   weather-{start}-{end}-00000-of-00001.parquet in --parquetDir
 * </pre>
 *
 * <p>One output per input on each side. Event time is the broker's (the input topic must have
 * message.timestamp.type=LogAppendTime), so a record keeps its window however late it is read: a second reader
 * of old records (beam#31313's twin) re-opens windows that closed before a savepoint, and both file sinks write
 * those windows' names again, replacing the files. Transform names are fixed: Flink operator uids derive from
 * them, so a savepoint of the stock jar restores into the patched jar and back.
 */
public final class WeatherPipeline {
  static final String CONSUMER_NONE = "none";
  static final String CONSUMER_GROUP = "group";
  static final String CONSUMER_EARLIEST = "earliest";

  private WeatherPipeline() {}

  public static void main(String[] args) {
    WeatherOptions options = PipelineOptionsFactory.fromArgs(args).as(WeatherOptions.class);
    options.setRunner(FlinkRunner.class);
    // Validated only now: validation resolves the default runner (DirectRunner), which is not bundled.
    PipelineOptionsValidator.validate(WeatherOptions.class, options);
    options.setStreaming(true);
    // Submit and return: a REST /jars/<id>/run submission is detached.
    options.setAttachedMode(false);
    if (options.getCheckpointingInterval() <= 0) {
      options.setCheckpointingInterval(1000L);
    }
    Pipeline pipeline = Pipeline.create(options);
    PCollection<WeatherReport> reports;
    if (options.getLineage()) {
      reports =
          pipeline
              .apply(
                  "Read",
                  consumer(
                      KafkaIO.<String, ReaderStamped<String>>read()
                          .withValueDeserializer(
                              ReaderStamping.of(StringDeserializer.class, StringUtf8Coder.of())),
                      options))
              .apply("Lineage", WithKafkaLineage.<String, String>of(KafkaLineage.submittedJobId()))
              .apply("ParseWeather", ParDo.of(new ParseWithLineageFn()));
    } else {
      reports =
          pipeline
              .apply(
                  "Read",
                  consumer(KafkaIO.<String, String>read().withValueDeserializer(StringDeserializer.class), options)
                      .withoutMetadata())
              .apply("Values", Values.create())
              .apply("ParseWeather", ParDo.of(new ParseFn()));
    }
    reports.setCoder(SerializableCoder.of(WeatherReport.class));
    Duration window = Duration.standardSeconds(options.getWindowSeconds());
    PCollection<String> lines =
        reports.apply("FormatJson", MapElements.into(TypeDescriptors.strings()).via(WeatherReport::toJsonLine));
    lines.apply(
            "WriteToKafka",
            KafkaIO.<Void, String>write()
                .withBootstrapServers(options.getBootstrapServers())
                .withTopic(options.getOutputTopic())
                .withValueSerializer(StringSerializer.class)
                .values());
    lines
        .apply("WindowJson", Window.into(FixedWindows.of(window)))
        .apply(
            "WriteText",
            TextIO.write()
                .to(options.getTextDir() + "/weather")
                .withSuffix(".json")
                .withWindowedWrites()
                .withNumShards(1));
    Schema schema = WeatherReport.avroSchema(options.getLineage());
    reports
        .apply("ToParquetRecord", ParDo.of(new ToRecordFn(schema.toString())))
        .setCoder(AvroCoder.of(schema))
        .apply("Window", Window.into(FixedWindows.of(window)))
        .apply(
            "WriteParquet",
            FileIO.<GenericRecord>write()
                .via(ParquetIO.sink(schema))
                .to(options.getParquetDir())
                .withPrefix("weather")
                .withSuffix(".parquet")
                .withNumShards(1));
    pipeline.run();
  }

  /** The read's bootstrap servers, topic, keys and consumer configuration, as --consumer says. */
  private static <V> KafkaIO.Read<String, V> consumer(KafkaIO.Read<String, V> read, WeatherOptions options) {
    return consumer(
        read, options.getBootstrapServers(), options.getInputTopic(), options.getConsumer(), options.getGroupId());
  }

  /**
   * The read's bootstrap servers, topic, keys (strings), log-append event time and consumer configuration:
   * 'none', 'group' (groupId, committed in finalize) or 'earliest'. The word count reads the same way.
   */
  static <V> KafkaIO.Read<String, V> consumer(
      KafkaIO.Read<String, V> read, String bootstrap, String topic, String consumer, String groupId) {
    Map<String, Object> config = new HashMap<>();
    KafkaIO.Read<String, V> configured =
        read.withBootstrapServers(bootstrap)
            .withTopic(topic)
            .withKeyDeserializer(StringDeserializer.class)
            .withLogAppendTime();
    switch (consumer) {
      case CONSUMER_NONE:
        // No group.id and no auto.offset.reset: Kafka's default, latest.
        return configured;
      case CONSUMER_GROUP:
        config.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return configured.withConsumerConfigUpdates(config).commitOffsetsInFinalize();
      case CONSUMER_EARLIEST:
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return configured.withConsumerConfigUpdates(config);
      default:
        throw new IllegalArgumentException(
            "--consumer must be none, group or earliest, not '" + consumer + "'");
    }
  }

  /** Parses each record value. */
  static final class ParseFn extends DoFn<String, WeatherReport> {
    @ProcessElement
    public void processElement(@Element String json, OutputReceiver<WeatherReport> out) {
      out.output(WeatherReport.parse(json, null));
    }
  }

  /** Parses each record value and keeps its lineage. */
  static final class ParseWithLineageFn extends DoFn<KV<KafkaLineage, KV<String, String>>, WeatherReport> {
    @ProcessElement
    public void processElement(
        @Element KV<KafkaLineage, KV<String, String>> record, OutputReceiver<WeatherReport> out) {
      out.output(WeatherReport.parse(record.getValue().getValue(), record.getKey()));
    }
  }

  /** Turns a report into its Parquet row; the schema travels as JSON (Avro's Schema is not serializable). */
  static final class ToRecordFn extends DoFn<WeatherReport, GenericRecord> {
    private final String schemaJson;
    private transient Schema schema;

    ToRecordFn(String schemaJson) {
      this.schemaJson = schemaJson;
    }

    @Setup
    public void setup() {
      schema = new Schema.Parser().parse(schemaJson);
    }

    @ProcessElement
    public void processElement(@Element WeatherReport report, OutputReceiver<GenericRecord> out) {
      out.output(report.toRecord(schema));
    }
  }
}
