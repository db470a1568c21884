package io.kvtier.server;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * How a completion answers: one JSON body, or server-sent events written and flushed one at a
 * time (blocking the exchange's thread only; a client that stops reading fails the write at the
 * connector's idle timeout).
 */
interface Reply {

  /**
   * Sends a whole JSON answer.
   *
   * @param status the HTTP status
   * @param body the JSON
   */
  void json(int status, String body);

  /**
   * Sends the headers of a {@code text/event-stream} answer, status 200.
   *
   * @throws IOException if the client went away
   */
  void startEvents() throws IOException;

  /**
   * Sends one event, {@code data: ...} and a blank line, and flushes it.
   *
   * @param data the event's data (JSON, or {@code [DONE]})
   * @throws IOException if the client went away or stopped reading
   */
  void event(String data) throws IOException;

  /**
   * Ends the stream.
   *
   * @throws IOException if the client went away
   */
  void endEvents() throws IOException;

  /** Whether {@link #startEvents()} was called: errors now go as events. */
  boolean streaming();

  /** The reply over a Jetty exchange. */
  final class JettyReply implements Reply {
    private final Request request;
    private final Response response;
    private final Callback callback;
    private boolean streaming;

    JettyReply(Request request, Response response, Callback callback) {
      this.request = request;
      this.response = response;
      this.callback = callback;
    }

    @Override
    public void json(int status, String body) {
      CompletionServer.sendJson(request, response, callback, status, body);
    }

    @Override
    public void startEvents() throws IOException {
      streaming = true;
      response.setStatus(200);
      response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/event-stream; charset=utf-8");
      response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
      Content.Sink.write(response, false, ByteBuffer.allocate(0));
    }

    @Override
    public void event(String data) throws IOException {
      byte[] bytes = ("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8);
      Content.Sink.write(response, false, ByteBuffer.wrap(bytes));
    }

    @Override
    public void endEvents() throws IOException {
      // A failed write reaches the server's handler, which fails the callback.
      Content.Sink.write(response, true, ByteBuffer.allocate(0));
      callback.succeeded();
    }

    @Override
    public boolean streaming() {
      return streaming;
    }
  }
}
