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

/** The weather job's program arguments, besides Flink's own (--parallelism, --checkpointingInterval). */
public interface WeatherOptions extends FlinkPipelineOptions {
  @Description("Kafka bootstrap servers, host:port[,host:port...].")
  @Validation.Required
  String getBootstrapServers();

  void setBootstrapServers(String value);

  @Description("The topic of JSON weather records to read, every partition of it.")
  @Validation.Required
  String getInputTopic();

  void setInputTopic(String value);

  @Description("The topic every parsed record is written to, one JSON line each.")
  @Validation.Required
  String getOutputTopic();

  void setOutputTopic(String value);

  @Description("Directory the JSON lines files are written to (TextIO, windowed; a local path or any Beam file system URI).")
  @Validation.Required
  String getTextDir();

  void setTextDir(String value);

  @Description("Directory the Parquet files are written to (a local path or any Beam file system URI).")
  @Validation.Required
  String getParquetDir();

  void setParquetDir(String value);

  @Description(
      "How the Kafka consumer starts: 'none' (no group.id; Kafka's auto.offset.reset=latest), 'group' (group"
          + " --groupId, offsets committed when a checkpoint is finalized, auto.offset.reset=earliest) or"
          + " 'earliest' (no group.id, auto.offset.reset=earliest).")
  @Default.String(WeatherPipeline.CONSUMER_NONE)
  String getConsumer();

  void setConsumer(String value);

  @Description("The consumer group with --consumer=group.")
  @Default.String("weather-job")
  String getGroupId();

  void setGroupId(String value);

  @Description("Add the lineage kit's columns (topic, partition, offset, reader_id, ...) to the Parquet rows.")
  @Default.Boolean(false)
  boolean getLineage();

  void setLineage(boolean value);

  @Description("Length of the file sinks' fixed windows (of the records' log-append times), in seconds.")
  @Default.Integer(3)
  int getWindowSeconds();

  void setWindowSeconds(int value);
}
