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

import org.apache.beam.runners.flink.FlinkPipelineOptions;
import org.apache.beam.sdk.options.Default;
import org.apache.beam.sdk.options.Description;
import org.apache.beam.sdk.options.Validation;

/** The word count's program arguments, besides Flink's own (--parallelism, --checkpointingInterval). */
public interface WordCountOptions extends FlinkPipelineOptions {
  @Description("Kafka bootstrap servers, host:port[,host:port...].")
  @Validation.Required
  String getBootstrapServers();

  void setBootstrapServers(String value);

  @Description("The topic of text lines to read, every partition of it.")
  @Validation.Required
  String getInputTopic();

  void setInputTopic(String value);

  @Description(
      "The topic the aggregates are written to: key the word, value a JSON object with the aggregate (value)"
          + " and its window's start (window_start).")
  @Validation.Required
  String getOutputTopic();

  void setOutputTopic(String value);

  @Description("How the Kafka consumer starts: none, group or earliest (as the weather job's --consumer).")
  @Default.String(WeatherPipeline.CONSUMER_GROUP)
  String getConsumer();

  void setConsumer(String value);

  @Description("The consumer group with --consumer=group.")
  @Default.String("word-count")
  String getGroupId();

  void setGroupId(String value);

  @Description(
      "The aggregate per word and window: count (Count.perElement), sum (Sum of each word's length) or max"
          + " (Max of each word's length: idempotent, a double read leaves it unchanged).")
  @Default.String("count")
  String getAggregate();

  void setAggregate(String value);

  @Description(
      "Window on event time (the records' log-append time, fixed windows, one pane at the watermark) instead of"
          + " processing time (the global window, a discarding pane every --windowSeconds of processing time).")
  @Default.Boolean(false)
  boolean getEventTime();

  void setEventTime(boolean value);

  @Description("Length of the windows, in seconds.")
  @Default.Integer(5)
  int getWindowSeconds();

  void setWindowSeconds(int value);
}
