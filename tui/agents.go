package tui

import (
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/engram-console/engram/core/clients"
	"github.com/engram-console/engram/core/conn"
	"github.com/engram-console/engram/core/errs"
	"github.com/engram-console/engram/core/events"
)

const agentsPaneID paneID = "agents"

// agentsKeys are the Agents tab's keys: it only moves through its list,
// the selected client's details showing under it.
type agentsKeys struct {
	Move  key.Binding
	Pages key.Binding
	Ends  key.Binding
}

// agentsPane lists the agent clients (MCP sessions) of the engine that owns
// the data directory, live: who is connected, through what, how many calls
// and errors, what it called last. Nothing here is stored: the owner keeps
// the registry in memory (core/clients), and the tab asks it again on
// every client event.
type agentsPane struct {
	requests
	styles *Styles
	keys   agentsKeys

	clients []clients.Client
	list    listCursor
	lists   loader // clients.list
	loaded  bool
	loadErr string
	// own is set once the engine refused all (the console's agent is not
	// the owner's): the tab then lists this agent's clients only.
	own bool
	// focused: the tab shows, so every agentsTick it asks for the list
	// again, which keeps "how long ago" true and finds the clients whose
	// engram mcp died without a word (kill -9: the owner marks them gone
	// when it lists them, and no event comes before); tickID tells the
	// current chain of ticks from one a Blur ended.
	focused bool
	tickID  int
	// private: the console keeps its data in memory (--in-memory) and
	// serves nothing, so no engram mcp can reach its engine.
	private bool

	width, height int
}

// agentsTick is how often the Agents tab asks for the list again while
// it shows: soon enough that a killed client does not look connected for
// long, and clients.list is cheap.
const agentsTick = 5 * time.Second

// agentsTickMsg asks the Agents tab for the list again (its times are
// relative, and a killed client shows as gone only once listed).
type agentsTickMsg struct{ id int }

func newAgentsPane(engine conn.Conn, styles *Styles) *agentsPane {
	return &agentsPane{
		requests: requests{conn: engine, pane: agentsPaneID},
		styles:   styles,
		keys: agentsKeys{
			Move:  withHelp(nav.Move, "↑/↓", "choose a client"),
			Pages: nav.Pages,
			Ends:  nav.Ends,
		},
	}
}

func (p *agentsPane) Title() string { return "Agents" }

func (p *agentsPane) Init() tea.Cmd { return p.load() }

// load asks for every agent's clients (the console runs as the owner's
// agent), or the console's own once the engine refused that.
func (p *agentsPane) load() tea.Cmd {
	return request(&p.requests, &p.lists, clients.ActionList, clients.ListArgs{All: !p.own})
}

// reloadAll loads the list again (events were missed, or another engram
// owns the directory now: its registry is another, and its agent may be
// the console's, so all is asked for again).
func (p *agentsPane) reloadAll() tea.Cmd {
	p.own = false
	return p.requests.refresh(&p.lists, p.load)
}

// Focus asks for the list again (a client may have died unseen while the
// tab was hidden) and starts the ticks that keep it true.
func (p *agentsPane) Focus() tea.Cmd {
	p.focused = true
	p.tickID++
	return tea.Batch(p.tick(), p.requests.refresh(&p.lists, p.load))
}

func (p *agentsPane) tick() tea.Cmd {
	id := p.tickID
	return tea.Tick(agentsTick, func(time.Time) tea.Msg { return agentsTickMsg{id: id} })
}

// Blur stops the ticks: a hidden tab needs none.
func (p *agentsPane) Blur() { p.focused = false }
func (p *agentsPane) Capturing() bool {
	return false
}

// KeyMap is every binding of the pane's keys struct.
func (p *agentsPane) KeyMap() []key.Binding { return bindingsOf(p.keys) }

func (p *agentsPane) Keys() []key.Binding {
	if len(p.clients) < 2 {
		return nil // nothing to choose between
	}
	return []key.Binding{p.keys.Move, p.keys.Pages, p.keys.Ends}
}

func (p *agentsPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.list.setHeight(p.listRows())
}

// refusedAll reports the engine's refusal of clients.list's all: the
// console's agent is not the one that owns the data directory.
func refusedAll(err error) bool {
	e := errs.As(err)
	return e.Kind == errs.Permission && e.Details["field"] == "all"
}

// quietFailure: the refusal of all is no error to the person; the tab
// says whose clients it lists instead.
func (p *agentsPane) quietFailure(_ int, err error) bool {
	return refusedAll(err)
}

func (p *agentsPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case resultMsg[clients.ListResult]:
		latest, again := p.lists.answer(msg.req)
		if !latest {
			return nil
		}
		if msg.err != nil && !p.own && refusedAll(msg.err) {
			p.own = true
			return p.load()
		}
		p.loaded, p.loadErr = true, ""
		if msg.err != nil {
			p.loadErr = errs.As(msg.err).Message
		} else {
			p.setClients(msg.value.Clients)
		}
		if again {
			return p.load()
		}
		return nil
	case events.Event:
		if isClientEvent(msg) {
			return p.requests.refresh(&p.lists, p.load)
		}
		return nil
	case agentsTickMsg:
		if !p.focused || msg.id != p.tickID {
			return nil // an old chain, or the tab is hidden
		}
		return tea.Batch(p.tick(), p.requests.refresh(&p.lists, p.load))
	case tea.KeyMsg:
		p.list.handleKey(msg)
		return nil
	}
	return nil
}

// isClientEvent reports the events that change what clients.list says.
func isClientEvent(ev events.Event) bool {
	switch ev.Name {
	case clients.EventConnected.Name(), clients.EventCall.Name(), clients.EventDisconnected.Name():
		return true
	}
	return false
}

// setClients shows a new list, keeping the same client selected.
func (p *agentsPane) setClients(list []clients.Client) {
	was := ""
	if p.list.Index() < len(p.clients) {
		c := p.clients[p.list.Index()]
		was = c.Agent + "\x00" + c.Session
	}
	p.clients = list
	p.list.setLen(len(list))
	p.list.keep(func(i int) bool { return list[i].Agent+"\x00"+list[i].Session == was })
	p.list.setHeight(p.listRows())
}

// detailRows is how many lines the selected client's details take at
// most: a rule, four lines of facts, two of its last error.
const detailRows = 7

// listRows is how many clients show at once: the body less the title,
// the table's header, and the details under the list.
// When there are more clients than rows, the last row says how many more
// are below, so one row fewer shows clients: the selected one always
// shows.
func (p *agentsPane) listRows() int {
	rows := max(p.height-2-detailRows, 1)
	if len(p.clients) > rows && rows > 1 {
		rows--
	}
	return rows
}
