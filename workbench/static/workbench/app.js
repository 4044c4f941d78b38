// The workbench's one script (no inline scripts: the Content-Security-Policy forbids them).
// Ask: the form's answer streams in as plain text, then is replaced by the server-rendered
// answer (Markdown rendered safely, source cards). Everything else is htmx attributes.
"use strict";

(function () {
  function parseFrames(buffer, onEvent) {
    // Server-Sent Events frames: "event: NAME\ndata: JSON\n\n"; returns the unfinished rest.
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
    return buffer;
  }

  function showResult(target, html) {
    target.innerHTML = html; // rendered by the server's templates: escaped, sanitised
    if (window.htmx) window.htmx.process(target);
  }

  function streamingBox(target) {
    target.innerHTML = "";
    const article = document.createElement("article");
    article.className = "answer look-streaming";
    article.dataset.look = "streaming";
    const body = document.createElement("div");
    body.className = "answer-body streaming-text";
    article.appendChild(body);
    target.appendChild(article);
    return body;
  }

  async function ask(form) {
    const target = document.getElementById("answer");
    const status = document.getElementById("ask-status");
    const button = document.getElementById("ask-submit");
    const body = new FormData(form);
    button.disabled = true;
    status.textContent = "Searching…";
    let textBox = null;
    try {
      const response = await fetch(form.dataset.streamUrl, {
        method: "POST", body: body, credentials: "same-origin",
        headers: {"X-CSRFToken": body.get("csrfmiddlewaretoken"), "Accept": "text/event-stream"},
      });
      if (response.redirected || !response.body) { window.location.reload(); return; }
      const type = response.headers.get("Content-Type") || "";
      if (!type.startsWith("text/event-stream")) {
        // Refused before the view ran (an expired CSRF token, a server error): no events.
        status.textContent = "The request failed (HTTP " + response.status + "); reload the page and try again.";
        return;
      }
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      let finished = false;
      const onEvent = function (name, data) {
        if (name === "status") {
          status.textContent = data.mode === "no_answer" ? "No source is close enough."
            : "Found " + data.sources + " source" + (data.sources === 1 ? "" : "s") + "; answering…";
          textBox = streamingBox(target);
        } else if (name === "delta") {
          if (!textBox) textBox = streamingBox(target);
          textBox.appendChild(document.createTextNode(data.text));
        } else if (name === "result") {
          finished = true;
          showResult(target, data.html);
          status.textContent = "";
        } else if (name === "invalid") {
          finished = true;
          status.textContent = "Please write a question.";
        }
      };
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) break;
        buffer = parseFrames(buffer + decoder.decode(chunk.value, {stream: true}), onEvent);
      }
      parseFrames(buffer + decoder.decode() + "\n\n", onEvent);
      if (!finished) {
        status.textContent = "The answer was cut off before it was complete.";
      }
    } catch (error) {
      status.textContent = "The connection failed: " + error.message;
    } finally {
      button.disabled = false;
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    const form = document.getElementById("ask-form");
    if (form) {
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        ask(form);
      });
    }
    // Elements that ask to be scrolled into view (the highlighted chunk of a source view).
    const focus = document.querySelector("[data-scroll-into-view]");
    if (focus) focus.scrollIntoView({block: "center"});
  });
})();
