package dev.splitaudit.flinkjobs;

import org.apache.flink.streaming.api.functions.sink.RichSinkFunction;

/**
 * The legacy rich sink function as Flink 1.x names it ({@code ...functions.sink.RichSinkFunction}); Flink 2.x moved
 * it to {@code ...functions.sink.legacy} (src/flink-2/java), so the jobs' sinks extend this class and compile
 * unchanged against either major.
 */
abstract class LegacyRichSink<T> extends RichSinkFunction<T> {
  private static final long serialVersionUID = 1L;
}
