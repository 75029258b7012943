// events.js reads GET /v1/events, a text/event-stream, through fetch:
// EventSource cannot send the Authorization header, and the token must
// not travel in the URL.

// readEvents calls onEvent({event, id, data}) for each event of the
// response's body until it ends; it parses the event-stream format
// (fields "event", "id", "data"; comments; CRLF or LF line ends).
export async function readEvents(resp, onEvent) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += value.replace(/\r\n?/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const ev = {event: 'message', id: '', data: ''};
      const data = [];
      for (const line of block.split('\n')) {
        if (line === '' || line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let val = c < 0 ? '' : line.slice(c + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'event') ev.event = val;
        else if (field === 'id') ev.id = val;
        else if (field === 'data') data.push(val);
      }
      ev.data = data.join('\n');
      onEvent(ev);
    }
  }
}
