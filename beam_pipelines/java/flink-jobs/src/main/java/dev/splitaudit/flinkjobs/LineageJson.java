package dev.splitaudit.flinkjobs;

import org.apache.flink.api.common.functions.RichMapFunction;

/**
 * Each record as the JSON object {@link JsonLinesSink} writes (its lineage, with the subtask, attempt and job
 * that emit it), for a sink that takes text: the Kafka topic sink of {@link KafkaLineageJob}.
 */
final class LineageJson extends RichMapFunction<LineageRecord, String> {
  private static final long serialVersionUID = 1L;

  @Override
  public String map(LineageRecord record) {
    return JsonLinesSink.line(record, getRuntimeContext());
  }
}
