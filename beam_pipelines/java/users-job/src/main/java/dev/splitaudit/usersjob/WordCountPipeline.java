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

import java.util.Arrays;
import org.apache.beam.runners.flink.FlinkRunner;
import org.apache.beam.sdk.Pipeline;
import org.apache.beam.sdk.io.kafka.KafkaIO;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.sdk.options.PipelineOptionsValidator;
import org.apache.beam.sdk.transforms.Count;
import org.apache.beam.sdk.transforms.DoFn;
import org.apache.beam.sdk.transforms.FlatMapElements;
import org.apache.beam.sdk.transforms.MapElements;
import org.apache.beam.sdk.transforms.Max;
import org.apache.beam.sdk.transforms.PTransform;
import org.apache.beam.sdk.transforms.ParDo;
import org.apache.beam.sdk.transforms.Sum;
import org.apache.beam.sdk.transforms.Values;
import org.apache.beam.sdk.transforms.windowing.AfterProcessingTime;
import org.apache.beam.sdk.transforms.windowing.BoundedWindow;
import org.apache.beam.sdk.transforms.windowing.FixedWindows;
import org.apache.beam.sdk.transforms.windowing.GlobalWindows;
import org.apache.beam.sdk.transforms.windowing.IntervalWindow;
import org.apache.beam.sdk.transforms.windowing.Repeatedly;
import org.apache.beam.sdk.transforms.windowing.Window;
import org.apache.beam.sdk.values.KV;
import org.apache.beam.sdk.values.PCollection;
import org.apache.beam.sdk.values.TypeDescriptors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.joda.time.Duration;

/**
 * A windowed word count shaped like the aggregating jobs users run: what a double read costs them is an inflated
 * count, which no record-level check sees.
 *
 * <pre>
 *   Read          KafkaIO.read of the input topic (text lines), log-append event time, --consumer as the
 *                 weather job's
 *   Values        the lines
 *   Words         the words of each line (split on spaces)
 *   Window        event time: fixed windows of --windowSeconds; processing time: the global window with a
 *                 discarding pane every --windowSeconds after a pane's first word
 *   Aggregate     count: Count.perElement(); sum: the sum of each word's length; max: the max of it
 *   Format        key the word, value {"value": n, "window_start": ms} (-1 in the global window)
 *   WriteToKafka  KafkaIO.write to the output topic
 * </pre>
 *
 * <p>Transform names are fixed, so a savepoint of the stock jar restores into the patched jar and back.
 */
public final class WordCountPipeline {
  private WordCountPipeline() {}

  public static void main(String[] args) {
    WordCountOptions options = PipelineOptionsFactory.fromArgs(args).as(WordCountOptions.class);
    options.setRunner(FlinkRunner.class);
    PipelineOptionsValidator.validate(WordCountOptions.class, options);
    options.setStreaming(true);
    options.setAttachedMode(false);
    if (options.getCheckpointingInterval() <= 0) {
      options.setCheckpointingInterval(1000L);
    }
    Pipeline pipeline = Pipeline.create(options);
    Duration size = Duration.standardSeconds(options.getWindowSeconds());
    PCollection<String> words =
        pipeline
            .apply(
                "Read",
                WeatherPipeline.consumer(
                        KafkaIO.<String, String>read().withValueDeserializer(StringDeserializer.class),
                        options.getBootstrapServers(),
                        options.getInputTopic(),
                        options.getConsumer(),
                        options.getGroupId())
                    .withoutMetadata())
            .apply("Values", Values.create())
            .apply(
                "Words",
                FlatMapElements.into(TypeDescriptors.strings())
                    .via((String line) -> Arrays.asList(line.split(" "))));
    PCollection<String> windowed =
        options.getEventTime()
            ? words.apply("Window", Window.into(FixedWindows.of(size)))
            : words.apply(
                "Window",
                Window.<String>into(new GlobalWindows())
                    .triggering(
                        Repeatedly.forever(AfterProcessingTime.pastFirstElementInPane().plusDelayOf(size)))
                    .discardingFiredPanes()
                    .withAllowedLateness(Duration.ZERO));
    windowed
        .apply("Aggregate", aggregate(options.getAggregate()))
        .apply("Format", ParDo.of(new FormatFn()))
        .apply(
            "WriteToKafka",
            KafkaIO.<String, String>write()
                .withBootstrapServers(options.getBootstrapServers())
                .withTopic(options.getOutputTopic())
                .withKeySerializer(StringSerializer.class)
                .withValueSerializer(StringSerializer.class));
    pipeline.run();
  }

  /** The per-word aggregate --aggregate names. */
  static PTransform<PCollection<String>, PCollection<KV<String, Long>>> aggregate(String name) {
    switch (name) {
      case "count":
        return Count.perElement();
      case "sum":
        return new ByLength("sum");
      case "max":
        return new ByLength("max");
      default:
        throw new IllegalArgumentException("--aggregate must be count, sum or max, not '" + name + "'");
    }
  }

  /** Each word keyed by itself with its length as the value, then summed or maxed per word. */
  static final class ByLength extends PTransform<PCollection<String>, PCollection<KV<String, Long>>> {
    private final String combine;

    ByLength(String combine) {
      this.combine = combine;
    }

    @Override
    public PCollection<KV<String, Long>> expand(PCollection<String> words) {
      PCollection<KV<String, Long>> lengths =
          words.apply(
              "Lengths",
              MapElements.into(TypeDescriptors.kvs(TypeDescriptors.strings(), TypeDescriptors.longs()))
                  .via((String word) -> KV.of(word, (long) word.length())));
      return "sum".equals(combine)
          ? lengths.apply("Sum", Sum.longsPerKey())
          : lengths.apply("Max", Max.longsPerKey());
    }
  }

  /** Key the word; value a JSON object with the aggregate and its window's start (-1: the global window). */
  static final class FormatFn extends DoFn<KV<String, Long>, KV<String, String>> {
    @ProcessElement
    public void processElement(
        @Element KV<String, Long> count, BoundedWindow window, OutputReceiver<KV<String, String>> out) {
      long start = window instanceof IntervalWindow ? ((IntervalWindow) window).start().getMillis() : -1L;
      out.output(
          KV.of(count.getKey(), "{\"value\":" + count.getValue() + ",\"window_start\":" + start + "}"));
    }
  }
}
