package dev.splitaudit.flinkjobs;

import org.apache.flink.streaming.api.functions.sink.legacy.RichSinkFunction;

/**
 * The legacy rich sink function as Flink 2.x names it ({@code ...functions.sink.legacy.RichSinkFunction}, still
 * taken by {@code DataStream#addSink}); Flink 1.x's is in src/flink-1/java, so the jobs' sinks extend this class
 * and compile unchanged against either major.
 */
abstract class LegacyRichSink<T> extends RichSinkFunction<T> {
  private static final long serialVersionUID = 1L;
}
